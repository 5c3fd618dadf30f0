"""Falling behind, judged from a stream's status (kinesis_batch.status.stream_status): which
shards are further behind than a threshold, and which have unread records close to leaving
retention. Pure: the Airflow check task and Dagster's asset checks judge the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kinesis_batch.shards.lag import RetentionRisk

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


def judge_lag(status: dict[str, Any], threshold_seconds: float) -> LagJudgement:
    """From ``stream_status(...)``: shards not at SHARD_END further behind than the threshold,
    and shards whose retention risk is critical or lost."""
    retention_seconds = status["retention_hours"] * 3600.0
    rows = [row for row in status["shards"] if row["checkpoint"] != "SHARD_END"]
    behind = sorted(
        (
            Behind(row["shard_id"], row["lag_seconds"], row["retention_risk"], retention_seconds - row["lag_seconds"])
            for row in rows
        ),
        key=lambda b: (-b.lag_seconds, b.shard_id),
    )
    return LagJudgement(
        status["stream"],
        threshold_seconds,
        lagging=tuple(b for b in behind if b.lag_seconds > threshold_seconds),
        at_risk=tuple(b for b in behind if b.retention_risk in AT_RISK),
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


__all__ = ["AT_RISK", "Behind", "LagJudgement", "duration", "judge_lag"]
