"""Pure: the ARNs of what a deployment touches, built from its settings and where it runs, in
the one shape IAM matches them (a policy's ``Resource``). A part of the name the settings leave
open (a routed output's ``{route}``, a batch's folder) is ``*`` and nothing wider.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kinesis_batch.routing.routes import ROUTE

_STREAM_ARN = re.compile(r"arn:(?P<partition>aws[a-z-]*):kinesis:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):stream/.+")


@dataclass(frozen=True)
class Where:
    """An account and region of a partition (``aws``, ``aws-cn``, ``aws-us-gov``)."""

    account: str
    region: str
    partition: str = "aws"

    def arn(self, service: str, resource: str) -> str:
        return f"arn:{self.partition}:{service}:{self.region}:{self.account}:{resource}"

    @property
    def root(self) -> str:
        """The account as a principal: its IAM decides which of its roles may act."""
        return f"arn:{self.partition}:iam::{self.account}:root"


def stream_where(stream_arn: str, default: Where) -> Where:
    """Where a stream named by ARN lives (another account's, often); ``default`` for a name."""
    match = _STREAM_ARN.fullmatch(stream_arn or "")
    return Where(match["account"], match["region"], match["partition"]) if match else default


def account_of(arn: str) -> str:
    """An ARN's account ('' for one that names none, an S3 bucket's)."""
    parts = arn.split(":")
    return parts[4] if len(parts) > 5 else ""


def stream(name_or_arn: str, where: Where) -> str:
    return name_or_arn if name_or_arn.startswith("arn:") else where.arn("kinesis", f"stream/{name_or_arn}")


def dynamodb_table(name: str, where: Where) -> str:
    return where.arn("dynamodb", f"table/{name}")


def s3_bucket_and_prefix(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` as (bucket, ``some/prefix``), a routed output's ``{route}`` as ``*``."""
    bucket, _, prefix = uri.split("://", 1)[1].partition("/")
    return bucket, prefix.replace(ROUTE, "*").strip("/")


def s3_objects(uri: str, partition: str = "aws") -> str:
    """Every object under the folder ``uri``."""
    bucket, prefix = s3_bucket_and_prefix(uri)
    return f"arn:{partition}:s3:::{bucket}/{prefix}/*" if prefix else f"arn:{partition}:s3:::{bucket}/*"


def s3_object(uri: str, partition: str = "aws") -> str:
    bucket, key = s3_bucket_and_prefix(uri)
    return f"arn:{partition}:s3:::{bucket}/{key}"


def s3_bucket(uri: str, partition: str = "aws") -> str:
    return f"arn:{partition}:s3:::{s3_bucket_and_prefix(uri)[0]}"


def glue_catalog(where: Where) -> str:
    return where.arn("glue", "catalog")


def glue_database(namespace: str, where: Where) -> str:
    return where.arn("glue", f"database/{namespace}")


def glue_table(namespace: str, table: str, where: Where) -> str:
    return where.arn("glue", f"table/{namespace}/{table.replace(ROUTE, '*')}")


def schema_registry(registry: str, where: Where) -> tuple[str, str]:
    """The registry and its schemas (GetSchemaVersion is authorized on both)."""
    return where.arn("glue", f"registry/{registry}"), where.arn("glue", f"schema/{registry}/*")


def emr_application(application_id: str, where: Where) -> str:
    return where.arn("emr-serverless", f"/applications/{application_id}")


def emr_job_runs(application_id: str, where: Where) -> str:
    return where.arn("emr-serverless", f"/applications/{application_id}/jobruns/*")


__all__ = [
    "Where", "dynamodb_table", "emr_application", "emr_job_runs", "glue_catalog", "glue_database", "glue_table",
    "s3_bucket", "s3_bucket_and_prefix", "s3_object", "s3_objects", "schema_registry", "stream",
    "stream_where",
]  # fmt: skip
