"""One catch-up run's configuration: the stream's settings (kinesis_batch.settings) and what
belongs to this run alone (its worker id, its bound, whether it may skip trimmed records)."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kinesis_batch.aws import S3Settings
from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.metrics.settings import MetricsSettings
from kinesis_batch.output import Output
from kinesis_batch.output.composite import RunSink
from kinesis_batch.parsers import parse_initial_position
from kinesis_batch.routing.routes import RouteRule
from kinesis_batch.settings import StreamSettings
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.limits import ReadLimits


def default_worker_id() -> str:
    """Unique per process: host, pid and a random suffix (two runs never share one by accident)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


COMMIT_CONCURRENCY = "KINESIS_BATCH_COMMIT_CONCURRENCY"


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
    """One run: the stream's settings (kinesis_batch.settings) and what belongs to this run only,
    with the settings parsed into the values the run works with."""

    settings: StreamSettings
    worker_id: str = field(default_factory=default_worker_id)
    until: datetime | None = None  # read records that arrived up to then (None: now)
    allow_gaps: bool = False
    output_binding: str = KEEP  # one of OUTPUT_BINDINGS
    # Checkpoint commits in flight at once within a lineage generation (DynamoDB transactions).
    commit_concurrency: int = field(default_factory=lambda: _env_int(COMMIT_CONCURRENCY, 16))
    # The runs that share this process's Spark session at once (a group's, kinesis_batch.run.group):
    # the read takes at most its share of the session's task slots, so no stream holds them all.
    slot_share: int = 1

    def __post_init__(self) -> None:
        if self.until is not None and self.until.tzinfo is None:
            raise IllegalArgumentError("--until must carry a time zone (or end in Z)")
        if self.slot_share < 1:
            raise IllegalArgumentError(f"slot_share must be at least 1, not {self.slot_share}")
        if self.commit_concurrency < 1:
            raise IllegalArgumentError(f"{COMMIT_CONCURRENCY} must be at least 1, not {self.commit_concurrency}")
        if self.output_binding not in OUTPUT_BINDINGS:
            raise IllegalArgumentError(f"output_binding must be one of {', '.join(OUTPUT_BINDINGS)}")
        if not self.worker_id or len(self.worker_id) > 256:
            raise IllegalArgumentError("--worker-id must be 1-256 characters")

    @classmethod
    def of(cls, **values: Any) -> RunConfig:
        """From settings and run fields by name, in one mapping (tests, benchmarks, JSON)."""
        run = {name: values.pop(name) for name in _RUN_FIELDS if name in values}
        return cls(StreamSettings.from_mapping(values), **run)

    def to_json(self) -> dict[str, Any]:
        """The run's settings as JSON (the spark-submitted read step gets them so)."""
        return {
            "settings": self.settings.to_json(),
            "worker_id": self.worker_id,
            "until": self.until.isoformat() if self.until else None,
            "allow_gaps": self.allow_gaps,
            "output_binding": self.output_binding,
            "commit_concurrency": self.commit_concurrency,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> RunConfig:
        until = body.get("until")
        return cls(
            StreamSettings.from_mapping(body["settings"]),
            worker_id=body["worker_id"],
            until=datetime.fromisoformat(until) if until else None,
            allow_gaps=bool(body.get("allow_gaps")),
            output_binding=body.get("output_binding", KEEP),
            commit_concurrency=int(body.get("commit_concurrency", 16)),
        )

    # The settings as the run uses them.
    @property
    def stream(self) -> str:
        return self.settings.stream

    @property
    def stream_id(self) -> str:
        """What Kinesis calls name the stream by: its ARN when given, else its name."""
        return self.settings.stream_id

    @property
    def output(self) -> str:
        return self.settings.output

    @property
    def format(self) -> str:
        return self.settings.format

    @property
    def catalog(self) -> str | None:
        return self.settings.catalog or None

    @property
    def table(self) -> str:
        return self.settings.lease_table

    @property
    def initial_position(self) -> Checkpoint:
        return parse_initial_position(self.settings.initial_position)

    @property
    def lease_seconds(self) -> float:
        return self.settings.lease_seconds

    @property
    def spark_master(self) -> str:
        return self.settings.spark_master

    @property
    def spark_remote(self) -> str:
        return self.settings.spark_remote

    @property
    def read_limits(self) -> ReadLimits:
        return ReadLimits.parse(self.settings.read_limits)

    @property
    def shards_per_task(self) -> int | None:
        """None: one task per Spark task slot (kinesis_batch.grouping)."""
        return self.settings.shards_per_task or None

    @property
    def decoding(self) -> DecodeSettings:
        return self.settings.decoding

    @property
    def partition_by(self) -> str | None:
        """None: the table's own (a new table's: day of arrival; kinesis_batch.storage.layout)."""
        return self.settings.partition_by or None

    @property
    def target_file_mb(self) -> int:
        return self.settings.target_file_mb

    @property
    def target_bytes(self) -> int:
        return self.target_file_mb * 1024 * 1024

    @property
    def destination(self) -> Output:
        """The output the run publishes to."""
        return self.settings.destination

    def open_sink(self, s3: S3Settings | None = None) -> RunSink:
        """The sink the run publishes to: its table or a template's tables, with the dead-letter
        output when it decodes, as one (kinesis_batch.output.composite)."""
        return self.destination.open_run(
            app=self.table,
            stream=self.stream,
            decoding=self.decoding,
            s3=s3,
            changes=self.changes,
        )

    @property
    def routing(self) -> RouteRule | None:
        """Which table each record goes to (None: all to the output; kinesis_batch.routing)."""
        return self.settings.route_rule

    @property
    def metrics(self) -> MetricsSettings:
        """Where the run's metrics go (kinesis_batch.metrics)."""
        return self.settings.metrics_settings

    @property
    def changes(self) -> ChangeSettings | None:
        """How the records are applied (None: appended; kinesis_batch.changes)."""
        return self.settings.change_settings


_RUN_FIELDS = ("worker_id", "until", "allow_gaps", "output_binding", "commit_concurrency", "slot_share")
