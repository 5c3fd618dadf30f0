"""The streams file: one ``kinesis_catchup__<stream>`` DAG per entry (dags/kinesis_streams.py).

A TOML file with one ``[[streams]]`` table per stream; only ``stream`` and ``output`` are
required::

    [[streams]]
    stream = "clicks"
    output = "s3://lake/tables/clicks"   # parquet: a folder; delta: a path or URI; iceberg: NS.TABLE
    format = "delta"                     # parquet (default) | delta | iceberg
    catalog = ""                         # iceberg: a pyiceberg catalog name
    table = ""                           # lease table (default kinesis-batch-STREAM)
    schedule = "@hourly"                 # a cron expression or preset
    spark_master = "local[*]"            # Spark in the task's process ...
    spark_conn_id = ""                   # ... or spark-submit the read step to this Spark connection
    aws_conn_id = "aws_default"
    lag_threshold_seconds = 3600         # the end-of-run check fails past it
    lease_seconds = 300
    read_limits = "kinesis"              # kinesis | none | CALLS,BYTES per shard and second

Where: ``[kinesis_batch] streams_file`` in Airflow's configuration
(``AIRFLOW__KINESIS_BATCH__STREAMS_FILE``), default ``$AIRFLOW_HOME/kinesis-batch-streams.toml``.
No file, no per-stream DAGs. Each entry is checked on its own: a broken one is reported with its
number, its stream and the field, and the others still make their DAGs.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from kinesis_batch.config import validate_stream_name, validate_table_name
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.orchestration import ORCHESTRATED_LEASE_SECONDS, Output
from kinesis_batch.shards.reader import ReadLimits

SECTION = "kinesis_batch"
FILE_NAME = "kinesis-batch-streams.toml"


@dataclass(frozen=True)
class StreamEntry:
    """One stream's consumer DAG. Checked when built: a bad value raises IllegalArgumentError
    that starts with the field's name."""

    stream: str
    output: str
    format: str = "parquet"
    catalog: str = ""
    table: str = ""
    schedule: str = "@hourly"
    spark_master: str = "local[*]"
    spark_conn_id: str = ""
    aws_conn_id: str = "aws_default"
    lag_threshold_seconds: float = 3600.0
    lease_seconds: float = ORCHESTRATED_LEASE_SECONDS
    read_limits: str = "kinesis"

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            wanted = float if field.type == "float" else str
            if wanted is float and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, field.name, float(value))
            elif not isinstance(value, wanted) or isinstance(value, bool):
                kind = "number" if wanted is float else "string"
                raise IllegalArgumentError(f"{field.name}: {value!r} is not a {kind}")
        _checked(("stream",), validate_stream_name, self.stream)
        _checked(("output", "format", "catalog"), lambda _: self.as_output(), self.output)
        if self.table:
            _checked(("table",), validate_table_name, self.table)
        if not self.schedule.strip():
            raise IllegalArgumentError("schedule: empty (a cron expression or a preset such as @hourly)")
        _checked(("read_limits",), ReadLimits.parse, self.read_limits)
        if self.lag_threshold_seconds <= 0:
            raise IllegalArgumentError(f"lag_threshold_seconds: {self.lag_threshold_seconds:g} is not positive")
        if not 10 <= self.lease_seconds <= 86_400:
            raise IllegalArgumentError(f"lease_seconds: {self.lease_seconds:g} is outside 10..86400")

    def as_output(self) -> Output:
        return Output(self.format, self.output, self.catalog or None)

    @property
    def dag_id(self) -> str:
        return "kinesis_catchup__" + re.sub(r"[^A-Za-z0-9_.-]", "_", self.stream)

    def params(self) -> dict[str, Any]:
        """The catch-up DAG's params for this stream (a manual trigger may still change them)."""
        return {
            "stream": self.stream,
            "format": self.format,
            "output": self.output,
            "catalog": self.catalog,
            "table": self.table,
            "spark_master": self.spark_master,
            "spark_conn_id": self.spark_conn_id,
            "aws_conn_id": self.aws_conn_id,
            "lease_seconds": self.lease_seconds,
            "read_limits": self.read_limits,
        }


@dataclass(frozen=True)
class BrokenEntry:
    number: int  # 1-based, in file order
    stream: str  # as written, or "" when missing
    message: str  # what is wrong, starting with the field

    def describe(self, path: Path) -> str:
        named = f" ({self.stream})" if self.stream else ""
        return f"{path}: stream {self.number}{named}: {self.message}"

    @property
    def dag_id(self) -> str:
        """The DAG this entry would have made (by its number when its stream is unusable)."""
        if self.stream and re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", self.stream):
            return "kinesis_catchup__" + self.stream
        return f"kinesis_catchup__entry_{self.number}"


def streams_file() -> Path:
    """Where the streams file is: ``[kinesis_batch] streams_file``, else in AIRFLOW_HOME."""
    from airflow.sdk import conf

    configured = (conf.get(SECTION, "streams_file", fallback="") or "").strip()
    home = os.environ.get("AIRFLOW_HOME") or str(Path.home() / "airflow")
    return Path(configured) if configured else Path(home) / FILE_NAME


def read_streams(path: Path) -> tuple[list[StreamEntry], list[BrokenEntry]]:
    """The file's entries, each checked on its own; a missing file has none. A file that is not
    TOML, or has no ``[[streams]]``, raises IllegalArgumentError (no DAG can be made from it)."""
    if not path.exists():
        return [], []
    try:
        body = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise IllegalArgumentError(f"{path}: {exc}") from exc
    raw = body.get("streams")
    if not isinstance(raw, list) or not all(isinstance(entry, dict) for entry in raw):
        raise IllegalArgumentError(f"{path}: no [[streams]] tables (each with at least stream and output)")
    entries, broken, seen = [], [], set()
    known = {field.name for field in fields(StreamEntry)}
    for number, entry in enumerate(raw, start=1):
        name = entry.get("stream") if isinstance(entry.get("stream"), str) else ""
        try:
            unknown = sorted(set(entry) - known)
            if unknown:
                raise IllegalArgumentError(f"{unknown[0]}: not a setting (the settings: {', '.join(sorted(known))})")
            missing = [key for key in ("stream", "output") if key not in entry]
            if missing:
                raise IllegalArgumentError(f"{missing[0]}: missing")
            stream = StreamEntry(**entry)
            if stream.dag_id in seen:
                raise IllegalArgumentError(f"stream: {stream.stream!r} is listed twice")
        except IllegalArgumentError as exc:
            broken.append(BrokenEntry(number, name, str(exc)))
            continue
        seen.add(stream.dag_id)
        entries.append(stream)
    return entries, broken


def _checked(names: tuple[str, ...], check: Any, value: Any) -> None:
    """Run ``check(value)``; its error is said as a field's, ``names[0]`` unless it names one of
    ``names`` itself (the library's messages say ``--option``)."""
    try:
        check(value)
    except IllegalArgumentError as exc:
        message = str(exc).removeprefix("--")
        raise IllegalArgumentError(message if message.startswith(names) else f"{names[0]}: {message}") from exc


__all__ = ["BrokenEntry", "StreamEntry", "read_streams", "streams_file"]
