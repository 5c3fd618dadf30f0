"""What the status views show, as values: a stream's consumer (:class:`StreamStatus`), each of
its shards (:class:`ShardStatus`), its output's last batch (:class:`OutputStatus`) and files
(:class:`FilesStatus`). Every adapter (the CLI, the Airflow page and DAGs, Dagster's checks, the
lag alert) reads these fields; ``to_json()`` is the JSON the CLI prints and the page serves."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kinesis_batch.binding import OutputMove
from kinesis_batch.landing import Landing, json_fields
from kinesis_batch.leases.model import SettleFailure
from kinesis_batch.maintenance.report import MaintenanceReport
from kinesis_batch.output.datafiles import FileStats
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lag import RetentionRisk, ShardLag


@dataclass(frozen=True)
class ShardOutput:
    """Where the output's last batch left one shard of it, and whether the checkpoint is there
    (not: a crash between the table commit and the checkpoint commit, rolled forward next run)."""

    batch_id: str
    end: str
    agrees: bool
    records: int
    landing: Landing | None

    def to_json(self) -> dict[str, Any]:
        return {
            "output_batch": self.batch_id,
            "output_end": self.end,
            "output_agrees": self.agrees,
            "output_records": self.records,
            **{f"output_{key}": value for key, value in json_fields(self.landing).items()},
        }


@dataclass(frozen=True)
class ShardStatus:
    """One shard: its place in the lineage, its lease and checkpoint (None: no lease yet), and
    its lag behind the checkpoint; ``output``: where the output's last batch left it (if it did)."""

    shard_id: str
    parent_shard_ids: tuple[str, ...]
    children: tuple[str, ...]
    lineage_depth: int
    closed: bool
    checkpoint: Checkpoint | None
    lease_owner: str | None
    lease_expires_at_ms: int | None
    pending_batch: str | None
    last_run: str | None
    lag: ShardLag
    retention_risk: RetentionRisk
    output: ShardOutput | None = None
    settle_failure: SettleFailure | None = None  # runs failed to settle the pending batch

    @property
    def settle_warning(self) -> str | None:
        """One line when runs keep failing to settle the pending batch: the shard's checkpoint
        stays where it is until one does, however quiet the stream looks."""
        failed = self.settle_failure
        if failed is None:
            return None
        return (
            f"{self.shard_id}: pending batch {failed.batch_id} failed to settle {failed.times} times "
            f"(the last: {failed.error}); its checkpoint waits for it. Fix what the error says; the next "
            "run settles it (rolls it forward if its output has it, else discards it)"
        )

    @property
    def finished(self) -> bool:
        """Read to SHARD_END: it can fall behind no more."""
        return self.checkpoint == Checkpoint.shard_end()

    @property
    def lag_seconds(self) -> float:
        return self.lag.lag_seconds

    def leased_at(self, now_ms: float) -> bool:
        """Held by a worker whose lease has not expired at ``now_ms``."""
        expires = self.lease_expires_at_ms
        return bool(self.lease_owner) and expires is not None and expires > now_ms

    def to_json(self) -> dict[str, Any]:
        oldest = self.lag.oldest_unread_at
        return {
            "shard_id": self.shard_id,
            "parent_shard_ids": list(self.parent_shard_ids),
            "children": list(self.children),
            "lineage_depth": self.lineage_depth,
            "closed": self.closed,
            "checkpoint": str(self.checkpoint) if self.checkpoint else None,
            "lease_owner": self.lease_owner,
            "lease_expires_at_ms": self.lease_expires_at_ms,
            "pending_batch": self.pending_batch,
            "last_run": self.last_run,
            "lag_seconds": self.lag_seconds,
            "oldest_unread_at": oldest.isoformat() if oldest else None,
            "millis_behind_latest": self.lag.millis_behind_latest,
            "retention_risk": self.retention_risk.value,
            "settle_failures": self.settle_failure.times if self.settle_failure else 0,
            "settle_error": self.settle_failure.error if self.settle_failure else None,
            **(self.output.to_json() if self.output else {}),
        }


@dataclass(frozen=True)
class FilesStatus:
    """The output's files now, a warning line when its recent partitions' are small (None: they
    are not), and its last maintenance (None: never maintained)."""

    stats: FileStats
    small_files: str | None
    last_maintenance: MaintenanceReport | None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.stats.to_json(),
            "small_files": self.small_files,
            "last_maintenance": self.last_maintenance.to_json() if self.last_maintenance else None,
        }


@dataclass(frozen=True)
class OutputStatus:
    """The output's last committed batch of this consumer (``last_batch`` None: none yet), the
    shards whose checkpoint is not where it ended, and its files (None: not listed)."""

    format: str
    uri: str
    last_batch: str | None
    last_run: str | None
    committed_at: datetime | None
    records: int
    landing: Landing | None
    disagreeing_shards: tuple[str, ...]
    files: FilesStatus | None = None

    def to_json(self) -> dict[str, Any]:
        body = {
            "format": self.format,
            "uri": self.uri,
            "last_batch": self.last_batch,
            "last_run": self.last_run,
            "committed_at": self.committed_at.isoformat() if self.committed_at else None,
            "records": self.records,
            **json_fields(self.landing),
            "disagreeing_shards": list(self.disagreeing_shards),
        }
        return body | ({"table": self.files.to_json()} if self.files else {})


@dataclass(frozen=True)
class PublishesTo:
    """The outputs the lease table records (kinesis_batch.binding), and their moves, oldest first."""

    output: str | None
    dead_letter_output: str | None
    moves: tuple[OutputMove, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "dead_letter_output": self.dead_letter_output,
            "moves": [
                {
                    "moved_at": move.moved_at.isoformat(),
                    "moved_by": move.moved_by,
                    "from": move.from_output,
                    "to": move.to_output,
                    "checkpoints": move.checkpoints,
                }
                for move in self.moves
            ],
        }


@dataclass(frozen=True)
class StreamStatus:
    """A stream's consumer at ``measured_at``: its shards in lineage order, its output (None: not
    named) and where it publishes (None: no run has marked the table yet)."""

    stream: str
    table: str
    measured_at: datetime
    retention_hours: int
    shards: tuple[ShardStatus, ...]
    output: OutputStatus | None
    publishes_to: PublishesTo | None

    @property
    def unfinished(self) -> tuple[ShardStatus, ...]:
        """The shards not read to SHARD_END: the ones that can be behind."""
        return tuple(shard for shard in self.shards if not shard.finished)

    @property
    def max_lag_seconds(self) -> float:
        return max((shard.lag_seconds for shard in self.unfinished), default=0.0)

    @property
    def worst_retention_risk(self) -> RetentionRisk:
        order = list(RetentionRisk)
        return max((shard.retention_risk for shard in self.shards), key=order.index, default=RetentionRisk.OK)

    def summary(self) -> dict[str, Any]:
        now_ms = self.measured_at.timestamp() * 1000
        return {
            "shards": len(self.shards),
            "open": sum(1 for shard in self.shards if not shard.closed),
            "leased": sum(1 for shard in self.shards if shard.leased_at(now_ms)),
            "pending_batches": sorted({shard.pending_batch for shard in self.shards if shard.pending_batch}),
            "max_lag_seconds": self.max_lag_seconds,
            "worst_retention_risk": self.worst_retention_risk.value,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "table": self.table,
            "measured_at": self.measured_at.isoformat(),
            "retention_hours": self.retention_hours,
            "summary": self.summary(),
            "shards": [shard.to_json() for shard in self.shards],
            "output": self.output.to_json() if self.output else None,
            "publishes_to": self.publishes_to.to_json() if self.publishes_to else None,
        }
