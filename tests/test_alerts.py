"""Falling behind, judged from a stream's status (table of cases: no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kinesis_batch.alerts import duration, judge_lag
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lag import RetentionRisk, ShardLag
from kinesis_batch.status import ShardStatus, StreamStatus

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)


def status(*shards: tuple[str, str, float, str], retention_hours: int = 24) -> StreamStatus:
    """A stream whose shards are (id, checkpoint, lag in seconds, retention risk)."""
    return StreamStatus(
        "clicks", "clicks", NOW, retention_hours, tuple(shard(*row) for row in shards), output=None, publishes_to=None
    )


def shard(shard_id: str, checkpoint: str, lag: float, risk: str) -> ShardStatus:
    at = Checkpoint.shard_end() if checkpoint == "SHARD_END" else Checkpoint.at(checkpoint)
    behind = ShardLag(shard_id, NOW, NOW - timedelta(seconds=lag), None)
    return ShardStatus(shard_id, (), (), 0, False, at, None, None, None, None, behind, RetentionRisk(risk))


@pytest.mark.parametrize(
    ("shards", "threshold", "lagging", "at_risk", "says"),
    [
        ([("a", "123", 5, "ok")], 60, [], [], "clicks is within 1m of the tip; nothing at retention risk"),
        (
            [("a", "123", 7200, "ok"), ("b", "9", 30, "ok")],
            3600,
            ["a"],
            [],
            "clicks is behind: 1 shard over the 1.0h lag threshold: a 2.0h behind (trimmed in 22.0h)",
        ),
        # A finished shard's old lag does not count; the most behind comes first.
        (
            [("a", "SHARD_END", 9e9, "lost"), ("b", "1", 100, "ok"), ("c", "1", 200, "ok")],
            60,
            ["c", "b"],
            [],
            "clicks is behind: 2 shards over the 1m lag threshold: c 3m behind (trimmed in 23.9h), b 2m behind",
        ),
        (
            [("a", "1", 85000, "critical"), ("b", "1", 90000, "lost")],
            1e9,
            [],
            ["b", "a"],
            "clicks is behind: 2 shards at retention risk: b 1.0d behind (records already trimmed), "
            "a 23.6h behind (trimmed in 23m)",
        ),
    ],
    ids=["caught-up", "one-lagging", "finished-shards-ignored", "retention"],
)
def test_judge_lag_names_the_shards_how_far_behind_and_when_retention_trims_them(
    shards: list[tuple[str, str, float, str]], threshold: float, lagging: list[str], at_risk: list[str], says: str
) -> None:
    judged = judge_lag(status(*shards), threshold)
    assert [b.shard_id for b in judged.lagging] == lagging
    assert [b.shard_id for b in judged.at_risk] == at_risk
    assert judged.ok == (not lagging and not at_risk)
    assert judged.message().startswith(says), judged.message()


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (42, "42s"), (61, "1m"), (3599, "60m"), (18720, "5.2h"), (267840, "3.1d")]
)
def test_duration_for_people(seconds: float, text: str) -> None:
    assert duration(seconds) == text
