"""A recorder of every AWS call this process makes through botocore, each as the IAM actions
and resources AWS authorizes it against, for the evaluator of devkit.iam_policy to check; and,
when asked, an enforcer that answers a call its principal's document does not allow as AWS
does, before it is sent."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import botocore.client
from devkit.iam_policy import Principal, Request, allowed, not_authorized, signer
from devkit.limits_proxy import Authorize

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
    elif service == "sts" and operation == "AssumeRole":  # the role's trust policy may ask its external id
        asked = (("sts:ExternalId", params["ExternalId"]),) if "ExternalId" in params else ()
        yield Request(action, params["RoleArn"], asked)
    elif prefix == "cloudwatch" and operation == "PutMetricData":
        yield Request(action, "*", (("cloudwatch:namespace", params["Namespace"]),))
    elif service == "glue" and operation == "GetSchemaVersion":
        yield from schema_version(params["SchemaId"]["RegistryName"], params["SchemaId"]["SchemaName"], where)
    elif service == "glue" and operation in GLUE_CATALOG:
        yield from catalog_call(action, *GLUE_CATALOG[operation](params), where)
    elif service == "emr-serverless":
        application = arns.emr_application(params.get("applicationId", ""), where)
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


def schema_version(registry: str, schema: str, where: Where) -> list[Request]:
    """A GetSchemaVersion, as IAM authorizes it: on the registry and on the schema."""
    return [Request("glue:GetSchemaVersion", arn.replace("*", schema)) for arn in arns.schema_registry(registry, where)]


def catalog_call(action: str, database: str, table: str, where: Where) -> list[Request]:
    """A Glue Data Catalog call, as IAM authorizes it: on the catalog, the database and the
    table, when it names one."""
    found = [arns.glue_catalog(where), arns.glue_database(database, where)]
    found += [arns.glue_table(database, table, where)] if table else []
    return [Request(action, arn) for arn in found]


def kms_decrypt(key: str, where: Where) -> Request:
    """The decrypt Kinesis asks KMS for, with ``key``, on behalf of a GetRecords' caller."""
    return Request("kms:Decrypt", key, (("kms:ViaService", f"kinesis.{where.region}.amazonaws.com"),))


def _s3_action(operation: str) -> str:
    return {"HeadObject": "GetObject", "CopyObject": "PutObject"}.get(operation, operation)


#: How each service's protocol names a denial, and its HTTP status.
DENIED = {"s3": ("AccessDenied", 403), "sts": ("AccessDenied", 403), "monitoring": ("AccessDenied", 403)}
#: Kinesis' answer to a GetRecords whose records its caller may not have KMS decrypt.
KMS_DENIED = "The ciphertext refers to a customer master key that does not exist, or you are not allowed to access it"


Answer = tuple[str, dict[str, Any]]  # an error code, and the response that says it


def denial(service: str, request: Request, principal: str, policy: str = "identity-based") -> Answer:
    """The error code and response AWS answers a call ``principal`` may not make, in IAM's words."""
    code, status = DENIED.get(service, ("AccessDeniedException", 400))
    said = not_authorized(principal, request, policy)
    return code, {"Error": {"Code": code, "Message": said}, "ResponseMetadata": {"HTTPStatusCode": status}}


@dataclass(frozen=True)
class Enforcer:
    """The policies calls are held to, as IAM holds them: each signer's identity policy
    (``principals``, by access key; ``"*"``: any other key's) and the resources' own
    (``resources``, by ARN: a role's trust policy, a stream's, a KMS key's). ``keys``: the KMS
    key of each encrypted stream, with which Kinesis decrypts a GetRecords' records for its
    caller. ``where`` and ``stream`` as for :meth:`Recorder.requests`; ``streams``: another
    stream for the calls signed with a key (a group's, each read by its own principal)."""

    principals: dict[str, Principal]
    where: Where
    stream: str = ""
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    streams: dict[str, str] = field(default_factory=dict)

    def refusal(self, service: str, operation: str, params: dict[str, Any], key: str) -> Answer | None:
        """AWS's error code and answer to the call, or None when the policies allow it."""
        principal = signer(self.principals, key)
        if principal is None or (service, operation) in UNAUTHORIZED:
            return None
        for request in _requests(service, operation, params, self.where, self.streams.get(key, self.stream)):
            if not self._allows(request, principal.document, principal.arn):
                return denial(service, request, principal.arn)
            policy = self.resources.get(request.resource)
            if policy is not None and not allowed(policy, request, principal.arn):
                return denial(service, request, principal.arn, "resource-based")
            used = self.keys.get(request.resource) if request.action == "kinesis:GetRecords" else None
            if used and not self._allows(kms_decrypt(used, self.where), principal.document, principal.arn):
                said = {"Code": "KMSAccessDeniedException", "Message": KMS_DENIED}
                return said["Code"], {"Error": said, "ResponseMetadata": {"HTTPStatusCode": 400}}
        return None

    def _allows(self, request: Request, document: dict[str, Any], principal: str) -> bool:
        """A KMS key's policy decides alone for a principal of its account it names; any other
        call needs its identity policy (and a resource's policy, checked beside)."""
        policy = self.resources.get(request.resource)
        if request.action.startswith("kms:"):
            if policy is None or not allowed(policy, request, principal):
                return False
            same = arns.account_of(request.resource) == arns.account_of(principal)
            return (same and allowed(policy, request, principal, by_root=False)) or allowed(document, request)
        return allowed(document, request)


def refusing(principals: dict[str, Principal], requests_of: Callable[[str, str], list[Request]]) -> Authorize:
    """A limits proxy's authorizer (devkit.limits_proxy) holding each signer to its principal's
    document: ``requests_of(operation, the table or stream named)``, what IAM authorizes a call by."""

    def check(operation: str, key: str, named: str) -> tuple[str, str] | None:
        principal = signer(principals, key)
        if principal is None:
            return None
        for request in requests_of(operation, named):
            if not allowed(principal.document, request):
                return "AccessDeniedException", not_authorized(principal.arn, request)
        return None

    return check


def proxied(
    service: str, where: Where, *, stream: str = "", schema: tuple[str, str] = ("", ""), role: str = ""
) -> Callable[[str, str], list[Request]]:
    """What IAM authorizes a call seen at a limits proxy by, from its operation and what it names
    (devkit.limits_proxy: a table, a stream, a Glue catalog's DATABASE/TABLE). What the proxy
    does not keep is given: ``stream`` for a call by iterator, ``schema`` (registry, name) for a
    GetSchemaVersion, ``role`` for an AssumeRole."""

    def requests_of(operation: str, named: str) -> list[Request]:
        action = f"{service}:{operation}"
        if service == "kinesis":
            return [Request(action, arns.stream(named, where) if named else stream)]
        if service == "dynamodb":
            return [Request(action, arns.dynamodb_table(named, where))]
        if service == "sts":
            return [Request(action, role)]
        if service == "glue" and operation == "GetSchemaVersion":
            return schema_version(*schema, where)
        if service == "glue":
            database, _, table = named.partition("/")
            return catalog_call(action, database, table, where)
        raise AssertionError(f"no IAM mapping of {action} as a proxy sees it")

    return requests_of


def worker(arn: str, document: dict[str, Any], where: Where, stream: str = "") -> Enforcer:
    """The environment's access key (the tests' worker signs with it) held to ``document`` as ``arn``."""
    return Enforcer({os.environ["AWS_ACCESS_KEY_ID"]: Principal(arn, document)}, where, stream)


@contextmanager
def recording(enforce: Enforcer | None = None) -> Iterator[Recorder]:
    """Record every botocore call this process makes meanwhile (threads too). With ``enforce``,
    a call the policies do not allow is answered as AWS answers it, naming the first action and
    resource refused, and never sent."""
    recorder = Recorder()
    original = botocore.client.BaseClient._make_api_call

    def make_api_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        credentials = client._request_signer._credentials  # the principal the call is signed as
        key = credentials.get_frozen_credentials().access_key if credentials is not None else ""
        service = client.meta.service_model.service_name
        recorder.calls.append((service, operation, dict(params), key))
        refused = enforce.refusal(service, operation, params, key) if enforce is not None else None
        if refused is not None:
            code, response = refused
            raise client.exceptions.from_code(code)(response, operation)
        return original(client, operation, params)

    with mock.patch.object(botocore.client.BaseClient, "_make_api_call", make_api_call):
        yield recorder


__all__ = [
    "KMS_DENIED", "Enforcer", "Recorder", "catalog_call", "kms_decrypt", "proxied", "recording", "refusing",
    "schema_version", "worker",
]  # fmt: skip
