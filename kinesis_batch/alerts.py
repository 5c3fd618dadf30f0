"""Falling behind, judged from a stream's status (kinesis_batch.status.stream_status): which
shards are further behind than a threshold, and which have unread records close to leaving
retention. And records that did not decode, judged from the output's last batch: more dead
letters than a share of its records. Pure: the Airflow check task and Dagster's asset checks
judge the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kinesis_batch.shards.lag import RetentionRisk
from kinesis_batch.storage.records import CommitRecord

if TYPE_CHECKING:
    from kinesis_batch.status import StreamStatus

#: The retention risks an alert is raised for.
AT_RISK = (RetentionRisk.CRITICAL.value, RetentionRisk.LOST.value)


@dataclass(frozen=True)
class Behind:
    """One unfinished shard's lag: its oldest unread record is ``lag_seconds`` old, and is
    trimmed by retention in ``seconds_left`` (0 or less: some are gone already)."""

    shard_id: str
    lag_seconds: float
    retention_risk: str
    seconds_left: float


@dataclass(frozen=True)
class LagJudgement:
    stream: str
    threshold_seconds: float
    lagging: tuple[Behind, ...]  # behind by more than the threshold, most behind first
    at_risk: tuple[Behind, ...]  # retention risk critical or lost, most behind first

    @property
    def ok(self) -> bool:
        return not self.lagging and not self.at_risk

    def message(self) -> str:
        """One line: which shards, how far behind, how long until retention trims them."""
        if self.ok:
            return f"{self.stream} is within {duration(self.threshold_seconds)} of the tip; nothing at retention risk"
        parts = []
        if self.lagging:
            shards = ", ".join(_describe(behind) for behind in self.lagging)
            threshold = duration(self.threshold_seconds)
            parts.append(f"{_shards(len(self.lagging))} over the {threshold} lag threshold: {shards}")
        if self.at_risk:
            shards = ", ".join(_describe(behind) for behind in self.at_risk)
            parts.append(f"{_shards(len(self.at_risk))} at retention risk: {shards}")
        return f"{self.stream} is behind: " + "; ".join(parts)


def judge_lag(status: StreamStatus, threshold_seconds: float) -> LagJudgement:
    """From ``stream_status(...)``: shards not at SHARD_END further behind than the threshold,
    and shards whose retention risk is critical or lost."""
    retention_seconds = status.retention_hours * 3600.0
    behind = sorted(
        (
            Behind(s.shard_id, s.lag_seconds, s.retention_risk.value, retention_seconds - s.lag_seconds)
            for s in status.unfinished
        ),
        key=lambda b: (-b.lag_seconds, b.shard_id),
    )
    return LagJudgement(
        status.stream,
        threshold_seconds,
        lagging=tuple(b for b in behind if b.lag_seconds > threshold_seconds),
        at_risk=tuple(b for b in behind if b.retention_risk in AT_RISK),
    )


@dataclass(frozen=True)
class DeadLetterJudgement:
    """The output's last batch against a ``threshold`` share of its records: ``dead_letters`` of
    ``records``, by shard (most first), and the most common reason."""

    stream: str
    batch_id: str | None
    threshold: float
    records: int
    dead_letters: int
    shards: tuple[tuple[str, int], ...]
    reason: str | None

    @property
    def share(self) -> float:
        return self.dead_letters / self.records if self.records else 0.0

    @property
    def ok(self) -> bool:
        return self.share <= self.threshold

    def message(self) -> str:
        """One line: how many, which shards, the most common reason."""
        limit = f"{self.threshold:.2%} threshold"
        if self.batch_id is None:
            return f"{self.stream}: no decoded batch yet"
        counted = f"{self.dead_letters} of {self.records} records ({self.share:.2%}) of batch {self.batch_id}"
        if self.ok:
            return f"{self.stream}: {counted} are dead letters, within the {limit}"
        shards = ", ".join(f"{shard} ({count})" for shard, count in self.shards)
        return f"{self.stream}: {counted} are dead letters, over the {limit}: {shards}; most common: {self.reason}"


def judge_dead_letters(stream: str, record: CommitRecord | None, threshold: float) -> DeadLetterJudgement:
    """The output's last batch (``record``; None: none yet) against ``threshold`` (0..1)."""
    if record is None or record.landing is None:
        return DeadLetterJudgement(stream, None, threshold, 0, 0, (), None)
    landing = record.landing
    shards = sorted(
        ((s.shard_id, s.landing.dead_letters) for s in record.shards if s.landing and s.landing.dead_letters),
        key=lambda item: (-item[1], item[0]),
    )
    reason = max(landing.reasons.items(), key=lambda item: (item[1], item[0]))[0] if landing.reasons else None
    return DeadLetterJudgement(
        stream, record.batch_id, threshold, record.records, landing.dead_letters, tuple(shards), reason
    )


def _describe(behind: Behind) -> str:
    if behind.seconds_left <= 0:
        return f"{behind.shard_id} {duration(behind.lag_seconds)} behind (records already trimmed)"
    return f"{behind.shard_id} {duration(behind.lag_seconds)} behind (trimmed in {duration(behind.seconds_left)})"


def _shards(count: int) -> str:
    return f"{count} shard" if count == 1 else f"{count} shards"


def duration(seconds: float) -> str:
    """A duration for people: 0s, 42s, 17m, 5.2h, 3.1d."""
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


__all__ = ["AT_RISK", "Behind", "DeadLetterJudgement", "LagJudgement", "duration", "judge_dead_letters", "judge_lag"]
