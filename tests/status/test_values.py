"""The status as values: the summary a stream's shards add up to, and the JSON every view shows
(table of cases: no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kinesis_batch.landing import Landing
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lag import RetentionRisk, ShardLag
from kinesis_batch.status import OutputStatus, ShardOutput, ShardStatus, StreamStatus

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)


def shard(
    shard_id: str,
    *,
    checkpoint: Checkpoint | None = None,
    behind: float = 0.0,
    risk: RetentionRisk = RetentionRisk.OK,
    owner: str | None = None,
    expires_in_ms: int = 0,
    pending: str | None = None,
    closed: bool = False,
) -> ShardStatus:
    lag = ShardLag(shard_id, NOW, NOW - timedelta(seconds=behind) if behind else None, 0)
    expires = NOW_MS + expires_in_ms if owner else None
    return ShardStatus(shard_id, (), (), 0, closed, checkpoint, owner, expires, pending, None, lag, risk)


def stream(*shards: ShardStatus) -> StreamStatus:
    return StreamStatus("clicks", "kinesis-batch-clicks", NOW, 24, shards, output=None, publishes_to=None)


def test_the_summary_counts_open_live_leases_pending_batches_and_the_worst_of_the_unfinished() -> None:
    status = stream(
        shard("a", checkpoint=Checkpoint.shard_end(), behind=9e5, risk=RetentionRisk.LOST, closed=True),
        shard("b", checkpoint=Checkpoint.at("1"), behind=120, owner="w-1", expires_in_ms=5000, pending="run-2"),
        shard("c", behind=30, owner="w-2", expires_in_ms=-1, risk=RetentionRisk.AT_RISK),  # an expired lease
    )
    assert status.summary() == {
        "shards": 3,
        "open": 2,
        "leased": 1,
        "pending_batches": ["run-2"],
        "max_lag_seconds": 120.0,  # a finished shard's old lag does not count
        "worst_retention_risk": "lost",
    }
    assert [s.shard_id for s in status.unfinished] == ["b", "c"]


def test_a_stream_with_no_shards_is_caught_up_and_at_no_risk() -> None:
    summary = stream().summary()
    assert (summary["max_lag_seconds"], summary["worst_retention_risk"]) == (0.0, "ok")


def test_a_shard_in_the_outputs_last_batch_carries_where_the_batch_left_it() -> None:
    left = ShardOutput("run-2", "42", False, 7, Landing(rows=6, dead_letters=1, reasons={"decode: not JSON": 1}))
    row = ShardStatus(
        "a", ("p",), (), 1, False, Checkpoint.at("41"), None, None, None, "run-1",
        ShardLag("a", NOW, None, 0), RetentionRisk.OK, left,
    ).to_json()  # fmt: skip
    assert row["checkpoint"] == "41" and row["parent_shard_ids"] == ["p"] and row["retention_risk"] == "ok"
    assert {key: value for key, value in row.items() if key.startswith("output_")} == {
        "output_batch": "run-2",
        "output_end": "42",
        "output_agrees": False,
        "output_records": 7,
        "output_rows": 6,
        "output_dead_letters": 1,
        "output_filtered": 0,
        "output_reasons": {"decode: not JSON": 1},
    }


def test_an_output_without_a_batch_of_this_consumer_says_so_and_shows_no_files() -> None:
    body = OutputStatus("delta", "s3://b/t", None, None, None, 0, None, ()).to_json()
    assert body == {
        "format": "delta",
        "uri": "s3://b/t",
        "last_batch": None,
        "last_run": None,
        "committed_at": None,
        "records": 0,
        "disagreeing_shards": [],
    }
