"""The streams file: a ``kinesis_catchup__<stream>`` and a ``kinesis_maintain__<stream>`` DAG per
entry (dags/kinesis_streams.py).

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
    decode = "raw"                       # raw | json | avro | protobuf, and the decoding settings:
    schema = ""                          # a schema file, or glue://REGISTRY/SCHEMA
    message = ""                         # protobuf: the message name
    decompress = "auto"                  # auto | gzip | none
    transform = ""                       # module:function, or cloudwatch-logs
    dead_letter_output = ""              # default: OUTPUT_dead_letter
    on_bad_record = "dead-letter"        # dead-letter | fail
    schema_evolution = "add-columns"     # add-columns | fail
    dead_letter_threshold = 1.0          # the end-of-run check fails past this share of dead letters
    partition_by = ""                    # a new table's: day (empty: the table's own), hour, day(FIELD),
                                         #   hour(FIELD), identity(FIELD) or none
    target_file_mb = 128                 # the runs' files roll at this size; maintenance compacts to it
    maintain_schedule = "30 3 * * *"     # the kinesis_maintain__<stream> DAG's schedule
    retain_hours = 168                   # maintenance keeps versions this long, and removes orphans once this old
    small_file_mb = 16                   # its check warns below this mean file size of recent partitions

Where: ``[kinesis_batch] streams_file`` in Airflow's configuration
(``AIRFLOW__KINESIS_BATCH__STREAMS_FILE``), default ``$AIRFLOW_HOME/kinesis-batch-streams.toml``.
No file, no per-stream DAGs. Each entry is checked on its own: a broken one is reported with its
number, its stream and the field, and the others still make their DAGs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from kinesis_batch import defaults
from kinesis_batch.config import validate_stream_name, validate_table_name
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.maintenance.settings import MaintainSettings
from kinesis_batch.orchestration import ORCHESTRATED_LEASE_SECONDS
from kinesis_batch.output import Output
from kinesis_batch.output.layout import PartitionBy
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.streams_file import BrokenEntry, StreamsFile

SECTION = "kinesis_batch"
#: The entry's fields that are decoding settings (kinesis_batch.decoding.settings), by their names.
DECODING = tuple(field.name for field in fields(DecodeSettings))
FILE_NAME = "kinesis-batch-streams.toml"


@dataclass(frozen=True)
class StreamEntry:
    """One stream's consumer DAG. Checked when built: a bad value raises IllegalArgumentError
    that starts with the field's name."""

    stream: str
    output: str
    format: str = defaults.FORMAT
    catalog: str = ""
    table: str = ""
    schedule: str = defaults.SCHEDULE
    spark_master: str = defaults.SPARK_MASTER
    spark_conn_id: str = ""
    aws_conn_id: str = defaults.AWS_CONN_ID
    lag_threshold_seconds: float = defaults.LAG_THRESHOLD_SECONDS
    lease_seconds: float = ORCHESTRATED_LEASE_SECONDS
    read_limits: str = defaults.READ_LIMITS
    decode: str = "raw"
    schema: str = ""
    message: str = ""
    decompress: str = "auto"
    transform: str = ""
    dead_letter_output: str = ""
    on_bad_record: str = "dead-letter"
    schema_evolution: str = "add-columns"
    dead_letter_threshold: float = defaults.DEAD_LETTER_THRESHOLD
    partition_by: str = ""
    target_file_mb: int = defaults.TARGET_FILE_MB
    maintain_schedule: str = defaults.MAINTAIN_SCHEDULE
    retain_hours: int = defaults.RETAIN_HOURS
    small_file_mb: float = defaults.SMALL_FILE_MB

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            wanted = {"float": float, "int": int}.get(str(field.type), str)
            if wanted is float and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, field.name, float(value))
            elif not isinstance(value, wanted) or isinstance(value, bool):
                kind = {float: "number", int: "whole number"}.get(wanted, "string")
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
        if not 0 <= self.dead_letter_threshold <= 1:
            raise IllegalArgumentError(f"dead_letter_threshold: {self.dead_letter_threshold:g} is not a share (0..1)")
        _checked(DECODING, lambda _: self.as_decoding(), self.decode)
        if self.partition_by:
            _checked(("partition_by",), PartitionBy.parse, self.partition_by)
        if not self.maintain_schedule.strip():
            raise IllegalArgumentError("maintain_schedule: empty (a cron expression or a preset such as @daily)")
        _checked(("target_file_mb", "retain_hours"), lambda _: self.maintain_settings(), self.target_file_mb)
        if self.small_file_mb < 0:
            raise IllegalArgumentError(f"small_file_mb: {self.small_file_mb:g} is negative")

    def maintain_settings(self) -> MaintainSettings:
        return MaintainSettings(self.target_file_mb, self.retain_hours)

    def as_output(self) -> Output:
        return Output(self.format, self.output, self.catalog or None)

    def as_decoding(self) -> DecodeSettings:
        return DecodeSettings.from_json({name: getattr(self, name) or None for name in DECODING})

    @property
    def dag_id(self) -> str:
        return "kinesis_catchup__" + re.sub(r"[^A-Za-z0-9_.-]", "_", self.stream)

    @property
    def maintain_dag_id(self) -> str:
        return "kinesis_maintain__" + re.sub(r"[^A-Za-z0-9_.-]", "_", self.stream)

    def dead_letters_at(self) -> str:
        """Where a decoding stream's dead letters go ("" for raw rows, which have none)."""
        decoding = self.as_decoding()
        return self.as_output().dead_letter(decoding.dead_letter_output).output if decoding.decoding else ""


def broken_dag_id(broken: BrokenEntry) -> str:
    """The DAG a broken entry would have made (by its number when its stream is unusable)."""
    if broken.stream and re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", broken.stream):
        return "kinesis_catchup__" + broken.stream
    return f"kinesis_catchup__entry_{broken.number}"


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
    return StreamsFile.read(path).entries(StreamEntry, [field.name for field in fields(StreamEntry)], key=_dag_id)


def _dag_id(entry: StreamEntry) -> str:
    return entry.dag_id


def _checked(names: tuple[str, ...], check: Any, value: Any) -> None:
    """Run ``check(value)``; its error is said as a field's, ``names[0]`` unless it names one of
    ``names`` itself (the library's messages say ``--option``)."""
    try:
        check(value)
    except IllegalArgumentError as exc:
        message = str(exc).removeprefix("--")
        raise IllegalArgumentError(message if message.startswith(names) else f"{names[0]}: {message}") from exc


__all__ = ["BrokenEntry", "StreamEntry", "broken_dag_id", "read_streams", "streams_file"]
