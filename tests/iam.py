"""A recorder of every AWS call this process makes through botocore, each as the IAM actions
and resources AWS authorizes it against, for the evaluator of devkit.iam_policy to check; and,
when asked, an enforcer that answers a call its principal's document does not allow as AWS
does, before it is sent."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import botocore.client
from devkit.iam_policy import Principal, Request, allowed, not_authorized

from kinesis_batch.access import arns
from kinesis_batch.access.arns import Where

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
        if operation == "StartJobRun":  # the job role is passed to the service; tags, put on the new job run
            passed = (("iam:PassedToService", "emr-serverless.amazonaws.com"),)
            yield Request("iam:PassRole", params["executionRoleArn"], passed)
            if params.get("tags"):
                yield Request("emr-serverless:TagResource", f"{application}/jobruns/new")
    elif service == "s3" and "Key" in params:
        yield Request(f"s3:{_s3_action(operation)}", f"arn:{where.partition}:s3:::{params['Bucket']}/{params['Key']}")
    elif service == "s3" and operation.startswith("ListObjects"):
        prefix_key = (("s3:prefix", params.get("Prefix", "")),)
        yield Request("s3:ListBucket", f"arn:{where.partition}:s3:::{params['Bucket']}", prefix_key)
    else:
        raise AssertionError(f"the recorder does not know what {service}:{operation} is authorized by: {params}")


def _s3_action(operation: str) -> str:
    return {"HeadObject": "GetObject", "CopyObject": "PutObject"}.get(operation, operation)


#: How each service's protocol names a denial, and its HTTP status.
DENIED = {"s3": ("AccessDenied", 403), "sts": ("AccessDenied", 403), "monitoring": ("AccessDenied", 403)}


def denial(service: str, request: Request, principal: str) -> tuple[str, dict[str, Any]]:
    """The error code and response AWS answers a call ``principal`` may not make, in IAM's words."""
    code, status = DENIED.get(service, ("AccessDeniedException", 400))
    said = not_authorized(principal, request)
    return code, {"Error": {"Code": code, "Message": said}, "ResponseMetadata": {"HTTPStatusCode": status}}


@contextmanager
def recording(
    enforce: dict[str, Principal] | None = None, *, where: Where | None = None, stream: str = ""
) -> Iterator[Recorder]:
    """Record every botocore call this process makes meanwhile (threads too). With ``enforce``
    (the principal of an access key, or of any other: ``"*"``) a call its signer's document does
    not allow is answered as AWS answers it, an access denied naming the first action and
    resource refused, and never sent; ``where`` and ``stream`` as for :meth:`Recorder.requests`."""
    recorder = Recorder()
    original = botocore.client.BaseClient._make_api_call
    held = enforce or {}

    def make_api_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        credentials = client._request_signer._credentials  # the principal the call is signed as
        key = credentials.get_frozen_credentials().access_key if credentials is not None else ""
        service = client.meta.service_model.service_name
        recorder.calls.append((service, operation, dict(params), key))
        principal = held.get(key, held.get("*"))
        if principal is not None and where is not None and (service, operation) not in UNAUTHORIZED:
            for request in _requests(service, operation, params, where, stream):
                if not allowed(principal.document, request):
                    code, response = denial(service, request, principal.arn)
                    raise client.exceptions.from_code(code)(response, operation)
        return original(client, operation, params)

    with mock.patch.object(botocore.client.BaseClient, "_make_api_call", make_api_call):
        yield recorder


__all__ = ["Recorder", "recording"]
