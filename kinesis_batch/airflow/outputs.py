"""The DAGs' output: the main table named in Airflow's configuration, its Asset URI, and the
table a backfill writes to when it names none.

The main output is read from the ``[kinesis_batch]`` section (``output``, ``format``,
``catalog``; or ``AIRFLOW__KINESIS_BATCH__OUTPUT`` and so on) when a DAG file is parsed: an
Asset's URI is fixed at parse time, so it cannot follow a run's params.

Asset URIs (Airflow 3.3 sanitizes them: a scheme it has no handler for is kept as written;
``s3://`` needs a bucket; ``airflow://`` is reserved):

- parquet: ``file:///absolute/root``
- delta: ``s3://bucket/prefix`` or ``file:///absolute/path``
- iceberg: ``iceberg://CATALOG/NAMESPACE.TABLE`` (CATALOG ``default`` when none is named), the
  same URI the Iceberg sink reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kinesis_batch.config import validate_output
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.output import FORMATS
from kinesis_batch.output.catalogs import DEFAULT_CATALOG
from kinesis_batch.output.place import is_s3

SECTION = "kinesis_batch"
DEFAULT_OUTPUT = "/tmp/kinesis-batch/output"


@dataclass(frozen=True)
class Output:
    """Where batches go: a format, its output (folder, table path or URI, NAMESPACE.TABLE) and,
    for iceberg, a pyiceberg catalog name (None: ``default``, or the embedded one)."""

    format: str = "parquet"
    output: str = DEFAULT_OUTPUT
    catalog: str | None = None

    def __post_init__(self) -> None:
        validate_output(self.format, self.output, self.catalog)

    @property
    def asset_uri(self) -> str:
        if self.format == "iceberg":
            return f"iceberg://{self.catalog or DEFAULT_CATALOG}/{self.output}"
        if is_s3(self.output):
            return "s3://" + self.output.split("://", 1)[1].strip("/")
        return "file://" + str(Path(self.output.removeprefix("file://")).absolute())


def configured_output() -> Output:
    """The main output as ``[kinesis_batch] output/format/catalog`` name it (parquet in
    /tmp/kinesis-batch/output when unset). A bad combination raises IllegalArgumentError, which
    a DAG file shows as its import error."""
    from airflow.sdk import conf

    def setting(key: str) -> str:
        return (conf.get(SECTION, key, fallback="") or "").strip()

    try:
        return Output(
            format=setting("format") or "parquet",
            output=setting("output") or DEFAULT_OUTPUT,
            catalog=setting("catalog") or None,
        )
    except IllegalArgumentError as exc:
        raise IllegalArgumentError(f"[{SECTION}] in Airflow's configuration: {exc}") from exc


def backfill_output(main: Output, format: str, backfill_id: str) -> str:
    """A backfill's own table next to the main one, when the backfill names none: parquet
    ``ROOT-backfill-ID``, delta ``URI_backfill_ID``, iceberg ``NAMESPACE.TABLE_backfill_ID``
    (lower case, ``[a-z0-9_]``). The backfill must be in the main output's format to derive one."""
    if format != main.format:
        raise IllegalArgumentError(
            f"output: a {format} backfill needs its output named (the main output {main.output} is {main.format})"
        )
    if format == "parquet":
        return f"{main.output.rstrip('/')}-backfill-{backfill_id}"
    if format == "delta":
        return f"{main.output.rstrip('/')}_backfill_{backfill_id}"
    suffix = re.sub(r"[^a-z0-9_]", "_", backfill_id.lower())
    return f"{main.output}_backfill_{suffix}"


__all__ = ["DEFAULT_OUTPUT", "FORMATS", "Output", "backfill_output", "configured_output"]
