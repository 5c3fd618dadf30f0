"""Falling behind, judged from a stream's status (table of cases: no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.alerts import duration, judge_lag


def status(*shards: tuple[str, str, float, str], retention_hours: float = 24) -> dict[str, Any]:
    rows = [
        {"shard_id": shard, "checkpoint": checkpoint, "lag_seconds": lag, "retention_risk": risk}
        for shard, checkpoint, lag, risk in shards
    ]
    return {"stream": "clicks", "retention_hours": retention_hours, "shards": rows}


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
