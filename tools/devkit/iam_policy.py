"""IAM for the tests: a policy evaluator of its own (an Allow-only identity policy, as IAM
evaluates it: action and resource patterns, StringEquals and StringLike conditions, every
condition key present), what IAM authorizes each S3 request by, and the answer AWS gives a call
its principal may not make. The botocore recorder (tests/iam.py) and the S3 recorder
(s3_recorder.py) both hold calls to it."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from devkit.s3_request import S3Request

#: The services whose calls are recorded through botocore (the table files go through pyarrow
#: and delta-rs, to the S3 recorder).
RECORDED = ("kinesis:", "dynamodb:", "cloudwatch:", "sts:", "glue:", "emr-serverless:", "iam:PassRole")


@dataclass(frozen=True)
class Request:
    """One authorization: an action on a resource, with its condition keys."""

    action: str
    resource: str
    context: tuple[tuple[str, str], ...] = ()


def allowed(document: dict[str, Any], request: Request, principal: str = "", *, by_root: bool = True) -> bool:
    """Whether an Allow statement of ``document`` matches ``request`` (no Deny). A resource's
    policy (a trust policy, a stream's, a key's) names who in each statement's Principal: it
    allows only ``principal``'s calls that one names (``by_root`` False: itself, not through its
    account's root)."""
    for statement in document["Statement"]:
        if statement["Effect"] != "Allow":
            continue
        if "Principal" in statement and not _names(statement["Principal"], principal, by_root):
            continue
        actions = _many(statement.get("Action", []))
        resources = _many(statement.get("Resource", "*" if "Principal" in statement else []))
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


def _names(wanted: dict[str, str | list[str]], principal: str, by_root: bool) -> bool:
    """Whether a Principal element names ``principal`` (a user's, a role's or a role session's
    ARN): an account's root names every principal of the account; a role, its sessions."""
    account = principal.split(":")[4] if principal.count(":") >= 5 else ""
    session = re.sub(r"^arn:([^:]+):sts::(\d+):assumed-role/([^/]+)/.*$", r"arn:\1:iam::\2:role/\3", principal)
    for one in _many(wanted.get("AWS", [])):
        if one in ("*", principal, session) or (by_root and one == f"arn:aws:iam::{account}:root"):
            return True
    return False


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


@dataclass(frozen=True)
class Principal:
    """Who signs with an access key, and the identity policy IAM holds it to."""

    arn: str
    document: dict[str, Any]


def signer(principals: dict[str, Principal], key: str) -> Principal | None:
    """The principal that signs with access key ``key``: its own, else any other key's (``"*"``)."""
    return principals.get(key, principals.get("*"))


def not_authorized(principal: str, request: Request, policy: str = "identity-based") -> str:
    """IAM's words for a call ``principal`` may not make, for want of a ``policy`` that allows
    it (``resource-based``: a stream's, a key's). S3's quote the resource."""
    resource = f'"{request.resource}"' if request.action.startswith("s3:") else request.resource
    return (
        f"User: {principal} is not authorized to perform: {request.action} on resource: {resource} "
        f"because no {policy} policy allows the {request.action} action"
    )


__all__ = ["RECORDED", "Principal", "Request", "allowed", "not_authorized", "s3_requests", "signer", "unneeded"]
