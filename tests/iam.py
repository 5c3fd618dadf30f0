"""IAM in tests: a policy evaluator of its own (an Allow-only identity policy, as IAM evaluates
it: action and resource patterns, StringEquals and StringLike conditions, every condition key
present) and a recorder of every AWS call this process makes through botocore, each as the IAM
actions and resources AWS authorizes it against. A test runs a real run with the recorder on and
asks the evaluator whether the generated policy allows every call it made."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import botocore.client
from devkit.s3_recorder import S3Request

from kinesis_batch.access import arns
from kinesis_batch.access.arns import Where

#: The services whose calls are recorded: botocore's (the table files go through pyarrow and delta-rs).
RECORDED = ("kinesis:", "dynamodb:", "cloudwatch:", "sts:", "glue:", "emr-serverless:", "iam:PassRole")
#: The operations that need no permission (STS answers anyone who it is).
UNAUTHORIZED = {("sts", "GetCallerIdentity")}
#: A transaction's items, as the item actions IAM authorizes them by.
TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}
#: The Glue Data Catalog's calls: the database and the table (or "") each names.
GLUE_CATALOG = {
    "GetDatabase": lambda p: (p["Name"], ""),
    "CreateDatabase": lambda p: (p["DatabaseInput"]["Name"], ""),
    "GetTable": lambda p: (p["DatabaseName"], p["Name"]),
    "CreateTable": lambda p: (p["DatabaseName"], p["TableInput"]["Name"]),
    "UpdateTable": lambda p: (p["DatabaseName"], p["TableInput"]["Name"]),
}
#: botocore's service names that are not IAM's prefix.
PREFIXES = {"monitoring": "cloudwatch"}


@dataclass(frozen=True)
class Request:
    """One authorization: an action on a resource, with its condition keys."""

    action: str
    resource: str
    context: tuple[tuple[str, str], ...] = ()


def allowed(document: dict[str, Any], request: Request) -> bool:
    """Whether an Allow statement of ``document`` matches ``request`` (an identity policy: no Deny)."""
    for statement in document["Statement"]:
        if statement["Effect"] != "Allow":
            continue
        actions = _many(statement.get("Action", []))
        resources = _many(statement.get("Resource", []))
        if not any(fnmatch.fnmatchcase(request.action.lower(), a.lower()) for a in actions):
            continue
        if not any(fnmatch.fnmatchcase(request.resource, r) for r in resources):
            continue
        if _conditions_hold(statement.get("Condition", {}), dict(request.context)):
            return True
    return False


def _conditions_hold(conditions: dict[str, dict[str, Any]], context: dict[str, str]) -> bool:
    for operator, keys in conditions.items():
        for key, wanted in keys.items():
            value = context.get(key)
            if value is None:
                return False
            if operator == "StringEquals" and value not in _many(wanted):
                return False
            if operator == "StringLike" and not any(fnmatch.fnmatchcase(value, w) for w in _many(wanted)):
                return False
            if operator not in ("StringEquals", "StringLike"):
                raise AssertionError(f"the evaluator does not know {operator}")
    return True


def _many(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def unneeded(document: dict[str, Any], requests: Iterable[Request], recorded: tuple[str, ...] = RECORDED) -> list[str]:
    """The Sids of ``document``'s statements on the ``recorded`` services (action prefixes) that
    no call of ``requests`` needs: with each taken out alone, every call is still allowed."""
    requests = list(requests)
    found = []
    for statement in document["Statement"]:
        actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        if not all(action.startswith(recorded) for action in actions):
            continue
        without = {**document, "Statement": [s for s in document["Statement"] if s is not statement]}
        if all(allowed(without, request) for request in requests):
            found.append(statement["Sid"])
    return found


@dataclass
class Recorder:
    """Every AWS call made through botocore while recording: (service, operation, parameters,
    the access key it was signed with)."""

    calls: list[tuple[str, str, dict[str, Any], str]] = field(default_factory=list)

    def requests(self, where: Where, *, stream: str) -> Iterator[Request]:
        """Each call as what IAM authorizes it by; ``stream``: the stream's ARN, for the calls
        that name it only by an iterator or a page token."""
        for service, operation, params, _ in self.calls:
            if (service, operation) in UNAUTHORIZED:
                continue
            yield from _requests(service, operation, params, where, stream)

    def signed_with(self) -> dict[str, Recorder]:
        """The calls by the access key that signed them: each principal's."""
        by_key: dict[str, Recorder] = {}
        for call in self.calls:
            by_key.setdefault(call[3], Recorder()).calls.append(call)
        return by_key


def _requests(service: str, operation: str, params: dict[str, Any], where: Where, stream: str) -> Iterator[Request]:
    prefix = PREFIXES.get(service, service)
    action = f"{prefix}:{operation}"
    if service == "kinesis":
        named = params.get("StreamARN") or params.get("StreamName")
        yield Request(action, arns.stream(named, where) if named else stream)
    elif service == "dynamodb" and operation == "TransactWriteItems":
        for item in params["TransactItems"]:
            (kind, body), = item.items()  # fmt: skip
            yield Request(f"dynamodb:{TRANSACT[kind]}", arns.dynamodb_table(body["TableName"], where))
    elif service == "dynamodb":
        yield Request(action, arns.dynamodb_table(params["TableName"], where))
    elif service == "sts" and operation == "AssumeRole":
        yield Request(action, params["RoleArn"])
    elif prefix == "cloudwatch" and operation == "PutMetricData":
        yield Request(action, "*", (("cloudwatch:namespace", params["Namespace"]),))
    elif service == "glue" and operation == "GetSchemaVersion":
        schema = params["SchemaId"]
        registry, named = arns.schema_registry(schema["RegistryName"], where)
        yield Request(action, registry)
        yield Request(action, named.replace("*", schema["SchemaName"]))
    elif service == "glue" and operation in GLUE_CATALOG:
        # IAM authorizes a Glue Data Catalog call on the catalog, the database and the table.
        at = f"arn:{where.partition}:glue:{where.region}:{where.account}"
        database, table = GLUE_CATALOG[operation](params)
        yield from (Request(action, f"{at}:catalog"), Request(action, f"{at}:database/{database}"))
        if table:
            yield Request(action, f"{at}:table/{database}/{table}")
    elif service == "emr-serverless":
        application = f"arn:{where.partition}:emr-serverless:{where.region}:{where.account}:/applications/"
        application += params.get("applicationId", "")
        if "jobRunId" in params:
            yield Request(action, f"{application}/jobruns/{params['jobRunId']}")
        elif "resourceArn" in params:
            yield Request(action, params["resourceArn"])
        else:
            yield Request(action, application)
        if operation == "StartJobRun":  # the job role is passed to the service
            passed = (("iam:PassedToService", "emr-serverless.amazonaws.com"),)
            yield Request("iam:PassRole", params["executionRoleArn"], passed)
    elif service == "s3" and "Key" in params:
        yield Request(f"s3:{_s3_action(operation)}", f"arn:{where.partition}:s3:::{params['Bucket']}/{params['Key']}")
    elif service == "s3" and operation.startswith("ListObjects"):
        prefix_key = (("s3:prefix", params.get("Prefix", "")),)
        yield Request("s3:ListBucket", f"arn:{where.partition}:s3:::{params['Bucket']}", prefix_key)
    else:
        raise AssertionError(f"the recorder does not know what {service}:{operation} is authorized by: {params}")


def _s3_action(operation: str) -> str:
    return {"HeadObject": "GetObject", "CopyObject": "PutObject"}.get(operation, operation)


def s3_requests(made: Iterable[S3Request], partition: str = "aws") -> Iterator[Request]:
    """Each request an S3 client made (tools/devkit/s3_recorder.py) as what IAM authorizes it by
    (the S3 actions' table in the Service Authorization Reference)."""
    for one in made:
        query, bucket = dict(one.query), f"arn:{partition}:s3:::{one.bucket}"
        action = _s3_bucket_action(one, query) if not one.key else _s3_object_action(one, query)
        if action == "s3:ListBucket":
            prefix = (("s3:prefix", query["prefix"]),) if "prefix" in query else ()
            yield Request(action, bucket, prefix)
        elif action == "s3:DeleteObject" and not one.key:  # DeleteObjects: each key's
            yield from (Request(action, f"{bucket}/{key}") for key in one.deleted)
        elif not one.key:
            yield Request(action, bucket)
        else:
            yield Request(action, f"{bucket}/{one.key}")
        if one.copy_source:
            yield Request("s3:GetObject", f"arn:{partition}:s3:::{one.copy_source.lstrip('/').split('?')[0]}")


def _s3_bucket_action(one: S3Request, query: dict[str, str]) -> str:
    if one.method == "POST" and "delete" in query:
        return "s3:DeleteObject"
    if one.method == "GET" and "location" in query:
        return "s3:GetBucketLocation"
    if one.method == "GET" and "uploads" in query:
        return "s3:ListBucketMultipartUploads"
    if one.method in ("GET", "HEAD") and not set(query) - {"list-type", "prefix", "delimiter", "max-keys",
                                                         "continuation-token", "start-after", "encoding-type",
                                                         "fetch-owner", "marker"}:  # fmt: skip
        return "s3:ListBucket"  # ListObjects(V2), and HeadBucket
    raise AssertionError(f"the recorder does not know what IAM authorizes {one} by")


def _s3_object_action(one: S3Request, query: dict[str, str]) -> str:
    if one.method == "DELETE":
        return "s3:AbortMultipartUpload" if "uploadId" in query else "s3:DeleteObject"
    if one.method in ("GET", "HEAD"):
        return "s3:ListMultipartUploadParts" if "uploadId" in query else "s3:GetObject"
    if one.method in ("PUT", "POST"):  # a put, a copy's target, a multipart upload's start, parts, end
        return "s3:PutObject"
    raise AssertionError(f"the recorder does not know what IAM authorizes {one} by")


@contextmanager
def recording() -> Iterator[Recorder]:
    """Record every botocore call this process makes meanwhile (threads too)."""
    recorder = Recorder()
    original = botocore.client.BaseClient._make_api_call

    def make_api_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        credentials = client._request_signer._credentials  # the principal the call is signed as
        key = credentials.get_frozen_credentials().access_key if credentials is not None else ""
        recorder.calls.append((client.meta.service_model.service_name, operation, dict(params), key))
        return original(client, operation, params)

    with mock.patch.object(botocore.client.BaseClient, "_make_api_call", make_api_call):
        yield recorder
