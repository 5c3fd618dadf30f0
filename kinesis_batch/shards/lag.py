"""How far a consumer is behind on a shard, in time, and whether retention is about to win.

The lag is the age of the oldest record the checkpoint has not covered yet. That is what
retention trims by, so it is also what the retention risk is judged on. Kinesis'
MillisBehindLatest is reported beside it (AWS: distance of the read position from the tip;
kinesalite always answers 0, so it cannot be the only measure).

Finding the oldest unread record reads one record after the checkpoint, through the same
:class:`ShardReader` the runs use (paced, throttling retried, aggregates and trimmed
checkpoints handled): about three GetRecords calls per shard.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING

from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.reader import ShardReader

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient

    from kinesis_batch.shards.checkpoint import Checkpoint
    from kinesis_batch.shards.model import Shard

# One record per call: a probe, not a read. The call rate stays under the shard's 5 calls/s.
_PROBE_LIMITS = ReadLimits(calls_per_second=5.0, bytes_per_second=None, records_per_call=1)


class RetentionRisk(Enum):
    """How close the oldest unread record is to being trimmed by the stream's retention."""

    OK = "ok"  # under half the retention period old
    AT_RISK = "at risk"  # over half: run more often, or raise the retention
    CRITICAL = "critical"  # over 90%: the next hours may trim unread records
    LOST = "lost"  # retention already trimmed past the checkpoint

    @classmethod
    def judge(cls, lag_seconds: float, retention_hours: float, *, trimmed: bool = False) -> RetentionRisk:
        if trimmed:
            return cls.LOST
        share = lag_seconds / (retention_hours * 3600)
        if share >= 0.9:
            return cls.CRITICAL
        if share >= 0.5:
            return cls.AT_RISK
        return cls.OK


@dataclass(frozen=True)
class ShardLag:
    """One shard's lag at ``measured_at``."""

    shard_id: str
    measured_at: datetime
    oldest_unread_at: datetime | None  # None: nothing unread (caught up, or the shard is finished)
    millis_behind_latest: int | None
    trimmed: bool = False  # the checkpoint's own record is gone: unread records were lost

    @property
    def lag_seconds(self) -> float:
        if self.oldest_unread_at is None:
            return 0.0
        return max(0.0, (self.measured_at - self.oldest_unread_at).total_seconds())

    def risk(self, retention_hours: float) -> RetentionRisk:
        return RetentionRisk.judge(self.lag_seconds, retention_hours, trimmed=self.trimmed)


def shard_lag(kinesis: KinesisClient, stream: str, shard: Shard, checkpoint: Checkpoint, now: datetime) -> ShardLag:
    """The lag of ``shard`` behind ``checkpoint`` (``now`` is when it was measured).

    Read-only: moves no checkpoint and takes no lease. A finished shard (SHARD_END) has no lag.
    """
    start = checkpoint.start_position()
    if start is None:
        return ShardLag(shard.shard_id, now, None, 0)
    reader = ShardReader(kinesis, stream, shard, start, limits=_PROBE_LIMITS, allow_gaps=True, prefetch=False)
    first = next(iter(reader), None)
    return ShardLag(
        shard_id=shard.shard_id,
        measured_at=now,
        oldest_unread_at=first.approximate_arrival_timestamp if first else None,
        millis_behind_latest=reader.millis_behind_latest,
        trimmed=reader.trimmed_after is not None,
    )
