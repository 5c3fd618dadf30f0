"""The datasets of a run as OpenLineage names them (namespace, name), pure.

- **A Kinesis stream**: the spec has no convention yet; ours follows its style for AWS services
  (a namespace of the service, region and account; the resource's name):
  ``kinesis://REGION:ACCOUNT`` and the stream's name, from the stream's ARN.
- **An output**: as the spec names storage: S3 ``s3://BUCKET`` and the key path; a local
  folder ``file`` and its absolute path; an Iceberg table ``iceberg://CATALOG`` and
  ``NAMESPACE.TABLE`` (its catalog's name, as kinesis-batch's assets name it).

And the words of a job's ``jobType`` facet: a finite run (``BATCH``) of this integration
(``KINESIS_BATCH``), a catch-up run (``JOB``) or a maintenance (``MAINTENANCE``).
"""

from __future__ import annotations

from pathlib import Path

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.output.formats import CATALOGED, named

PROCESSING, INTEGRATION, RUN_JOB, MAINTENANCE_JOB = "BATCH", "KINESIS_BATCH", "JOB", "MAINTENANCE"


def stream_dataset(arn: str) -> tuple[str, str]:
    """``arn:aws:kinesis:REGION:ACCOUNT:stream/NAME`` -> (``kinesis://REGION:ACCOUNT``, NAME)."""
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[2] != "kinesis" or not parts[5].startswith("stream/"):
        raise IllegalArgumentError(f"{arn!r} is not a Kinesis stream's ARN")
    return f"kinesis://{parts[3]}:{parts[4]}", parts[5].removeprefix("stream/")


def output_dataset(asset_uri: str) -> tuple[str, str]:
    """An output's asset URI (kinesis_batch.output.Output.asset_uri), or a sink's URI (a local
    table's is its path), as (namespace, name)."""
    if "://" not in asset_uri:
        return "file", str(Path(asset_uri).absolute())
    scheme, _, rest = asset_uri.partition("://")
    if scheme == "s3":
        bucket, _, key = rest.partition("/")
        return f"s3://{bucket}", key.strip("/")
    if scheme == "file":
        return "file", str(Path(rest))
    if scheme in named(CATALOGED):  # a catalog's table: FORMAT://CATALOG/NAMESPACE.TABLE
        catalog, _, table = rest.partition("/")
        return f"iceberg://{catalog}", table
    raise IllegalArgumentError(f"{asset_uri!r}: no OpenLineage name for this output")


__all__ = ["INTEGRATION", "MAINTENANCE_JOB", "PROCESSING", "RUN_JOB", "output_dataset", "stream_dataset"]
