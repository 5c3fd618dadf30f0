"""Validated settings of a catch-up run, and the parsers for their command-line forms.

Every parser raises IllegalArgumentError with a message that names the setting and shows an
accepted form, so the CLI can print it as its one line.
"""

from __future__ import annotations

import os
import re
import socket
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kinesis_batch import defaults
from kinesis_batch.checkpoints.model import Checkpoint
from kinesis_batch.decoding.settings import RAW, DecodeSettings
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.shards.limits import ReadLimits

#: The output formats (kinesis_batch.output): hive folders of Parquet, a Delta table, an Iceberg table.
FORMATS = ("parquet", "delta", "iceberg")

_STREAM_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")
_TABLE_NAME = re.compile(r"^[a-zA-Z0-9_.-]{3,255}$")
_RUN_ID = re.compile(r"^[a-zA-Z0-9_-][a-zA-Z0-9_.-]{0,127}$")  # a folder name: batch_id=<run id>


def default_worker_id() -> str:
    """Unique per process: host, pid and a random suffix (two runs never share one by accident)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def default_table(stream: str) -> str:
    return defaults.lease_table(stream)


def validate_stream_name(stream: str) -> str:
    if not _STREAM_NAME.match(stream or ""):
        raise IllegalArgumentError(f"--stream: {stream!r} is not a Kinesis stream name (1-128 of a-z A-Z 0-9 _ . -)")
    return stream


def validate_table_name(table: str) -> str:
    if not _TABLE_NAME.match(table or ""):
        raise IllegalArgumentError(f"--table: {table!r} is not a DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -)")
    return table


def validate_run_id(run_id: str, *, setting: str = "--run-id") -> str:
    if not _RUN_ID.match(run_id or ""):
        raise IllegalArgumentError(
            f"{setting}: {run_id!r} is not a run id (1-128 of a-z A-Z 0-9 _ . -, not starting with a dot)"
        )
    return run_id


def parse_time(text: str, *, setting: str = "time") -> datetime:
    """An ISO 8601 time; without a zone it is taken as UTC. Returned in UTC."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise IllegalArgumentError(f"{setting}: {text!r} is not an ISO 8601 time (e.g. 2026-11-22T03:00:00Z)") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_initial_position(text: str) -> Checkpoint:
    """``trim_horizon``, ``latest`` or ``at_timestamp=ISO8601`` (case-insensitive)."""
    kind, _, argument = text.strip().partition("=")
    kind = kind.lower()
    if kind == "trim_horizon" and not argument:
        return Checkpoint.trim_horizon()
    if kind == "latest" and not argument:
        return Checkpoint.latest()
    if kind == "at_timestamp" and argument:
        return Checkpoint.at_timestamp(parse_time(argument, setting="--initial-position at_timestamp"))
    raise IllegalArgumentError(f"--initial-position: {text!r} is not one of trim_horizon, latest, at_timestamp=ISO8601")


def validate_output(format: str, output: str, catalog: str | None) -> None:
    """The --format/--output/--catalog combinations that cannot work, each said in one line."""
    if format not in FORMATS:
        raise IllegalArgumentError(f"--format: {format!r} is not one of {', '.join(FORMATS)}")
    if catalog and format != "iceberg":
        raise IllegalArgumentError("--catalog goes with --format iceberg")
    if format == "parquet" and output.startswith(("s3://", "s3a://")):
        raise IllegalArgumentError(
            f"--output {output}: the parquet format publishes by renaming a folder, and S3 has no atomic "
            "rename; write to S3 with --format delta or --format iceberg"
        )
    if format == "iceberg":
        namespace, _, table = output.rpartition(".")
        if not namespace or not table or "/" in output or any(not part for part in output.split(".")):
            raise IllegalArgumentError(
                f"--output {output!r}: an Iceberg table is named NAMESPACE.TABLE (for example analytics.clicks)"
            )


COMMIT_CONCURRENCY = "KINESIS_BATCH_COMMIT_CONCURRENCY"


def validate_target_file_mb(target: int) -> int:
    """``--target-file-mb``: the size the runs' files roll at and maintenance compacts to."""
    if isinstance(target, bool) or not isinstance(target, int) or not 1 <= target <= 4096:
        raise IllegalArgumentError(f"--target-file-mb must be a whole number in 1..4096, not {target!r}")
    return target


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "")
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise IllegalArgumentError(f"{name}={text!r}: a whole number is needed") from None


#: RunConfig.output_binding (kinesis_batch.binding): keep the lease table's output (refuse
#: another), move it to this run's (--move-output), or none (a backfill that moves the main
#: checkpoints into an output of its own leaves the main table's output as it is).
KEEP, MOVE, NONE = "keep", "move", "none"
OUTPUT_BINDINGS = (KEEP, MOVE, NONE)


@dataclass(frozen=True)
class RunConfig:
    stream: str
    output: str
    table: str = ""  # "" -> default_table(stream); the CLI passes --table only when given
    initial_position: Checkpoint = field(default_factory=Checkpoint.trim_horizon)
    until: datetime | None = None
    lease_seconds: float = defaults.LEASE_SECONDS
    worker_id: str = field(default_factory=default_worker_id)
    allow_gaps: bool = False
    spark_master: str = defaults.SPARK_MASTER
    read_limits: ReadLimits = field(default_factory=lambda: ReadLimits.parse(defaults.READ_LIMITS))
    format: str = defaults.FORMAT  # one of FORMATS (kinesis_batch.output)
    catalog: str | None = None  # iceberg: a pyiceberg catalog name (None: "default", or the embedded one)
    shards_per_task: int | None = None  # None: one task per Spark task slot (kinesis_batch.grouping)
    # Checkpoint commits in flight at once within a lineage generation (DynamoDB transactions).
    commit_concurrency: int = field(default_factory=lambda: _env_int(COMMIT_CONCURRENCY, 16))
    decoding: DecodeSettings = RAW  # raw rows, or typed ones with a dead-letter output (kinesis_batch.decoding)
    partition_by: str | None = None  # --partition-by (kinesis_batch.output.layout); None: the table's own
    target_file_mb: int = defaults.TARGET_FILE_MB  # a task's files roll at this size
    output_binding: str = KEEP  # one of OUTPUT_BINDINGS

    @property
    def target_bytes(self) -> int:
        return self.target_file_mb * 1024 * 1024

    def __post_init__(self) -> None:
        validate_stream_name(self.stream)
        if not self.output:
            raise IllegalArgumentError("--output: an output root is needed")
        validate_output(self.format, self.output, self.catalog)
        if not self.table:
            object.__setattr__(self, "table", default_table(self.stream))
        validate_table_name(self.table)
        if self.initial_position.sentinel is None or self.initial_position.is_shard_end:
            raise IllegalArgumentError("--initial-position must be trim_horizon, latest or at_timestamp=ISO8601")
        if self.until is not None and self.until.tzinfo is None:
            raise IllegalArgumentError("--until must carry a time zone (or end in Z)")
        if not 10 <= self.lease_seconds <= 86_400:
            raise IllegalArgumentError(f"--lease-seconds: {self.lease_seconds:g} is outside 10..86400")
        if self.commit_concurrency < 1:
            raise IllegalArgumentError(f"{COMMIT_CONCURRENCY} must be at least 1, not {self.commit_concurrency}")
        per_task = self.shards_per_task
        if per_task is not None and (isinstance(per_task, bool) or not isinstance(per_task, int) or per_task < 1):
            raise IllegalArgumentError(f"--shards-per-task must be a whole number of at least 1, not {per_task!r}")
        if self.partition_by is not None:
            from kinesis_batch.output.layout import PartitionBy

            PartitionBy.parse(self.partition_by)
        validate_target_file_mb(self.target_file_mb)
        if self.output_binding not in OUTPUT_BINDINGS:
            raise IllegalArgumentError(f"output_binding must be one of {', '.join(OUTPUT_BINDINGS)}")
        if not self.worker_id or len(self.worker_id) > 256:
            raise IllegalArgumentError("--worker-id must be 1-256 characters")
        if self.decoding.dead_letter_output:
            validate_output(self.format, self.decoding.dead_letter_output, self.catalog)
            if self.decoding.dead_letter_output == self.output:
                raise IllegalArgumentError("--dead-letter-output must differ from --output")
