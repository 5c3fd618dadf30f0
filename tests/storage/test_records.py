"""The commit record a published batch carries: written as JSON and read back whole, its
figures derived from its shards, and records written before a field existed still read."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.cost import ReadCost
from kinesis_batch.landing import Landing
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.storage.records import CommitRecord, ShardCommit

SEQUENCES = st.integers(0, 10**60).map(str)
LANDINGS = st.none() | st.builds(
    Landing,
    rows=st.integers(0, 10**6),
    dead_letters=st.integers(0, 1000),
    filtered=st.integers(0, 1000),
    reasons=st.dictionaries(st.sampled_from(["decode: not JSON", "schema: type changed"]), st.integers(1, 9)),
)
SHARDS = st.builds(
    ShardCommit,
    shard_id=st.from_regex(r"shardId-[0-9]{12}", fullmatch=True),
    start=st.just(Checkpoint.trim_horizon()) | SEQUENCES.map(Checkpoint.at),
    end=SEQUENCES.map(Checkpoint.at) | st.just(Checkpoint.shard_end()),
    records=st.integers(0, 10**7),
    reached_shard_end=st.booleans(),
    trimmed_after=st.none() | SEQUENCES,
    lag_at_start_ms=st.none() | st.integers(0, 10**9),
    landing=LANDINGS,
    bytes=st.integers(0, 10**12),
    millis_behind_latest=st.none() | st.integers(0, 10**9),
)
COSTS = st.none() | st.builds(
    ReadCost, st.just("jr-1"), st.just("app-1"), st.floats(0, 99), st.floats(0, 99), st.floats(0, 99)
)


@given(shards=st.lists(SHARDS, max_size=4, unique_by=lambda s: s.shard_id), cost=COSTS)
def test_a_record_reads_back_as_it_was_written(shards: list[ShardCommit], cost: ReadCost | None) -> None:
    record = CommitRecord("b-1", "r-1", "orders", datetime(2026, 11, 29, 10, tzinfo=UTC), tuple(shards), cost)
    assert CommitRecord.from_json(record.to_json()) == record
    assert CommitRecord.from_json(record.to_json(indent=None)) == record


def test_its_figures_are_its_shards_together() -> None:
    a = ShardCommit(
        "s-0", Checkpoint.trim_horizon(), Checkpoint.at("9"), 5, False, landing=Landing(rows=4, dead_letters=1)
    )
    b = ShardCommit("s-1", Checkpoint.trim_horizon(), Checkpoint.shard_end(), 3, True, landing=Landing(rows=3))
    record = CommitRecord("b", "r", "s", datetime(2026, 1, 1, tzinfo=UTC), (a, b))
    assert record.records == 8 and record.shard("s-1") == b and record.shard("s-9") is None
    assert record.landing == Landing(rows=7, dead_letters=1)
    raw = CommitRecord("b", "r", "s", datetime(2026, 1, 1, tzinfo=UTC), (ShardCommit("s", a.start, a.end, 2, False),))
    assert raw.landing is None, "raw rows have no landing"


def test_a_record_written_before_bytes_and_costs_were_kept_still_reads() -> None:
    shard = {"shard_id": "s-0", "records": 2, "reached_shard_end": False}
    shard |= {"start": Checkpoint.trim_horizon().to_json(), "end": Checkpoint.at("7").to_json()}
    body = {"batch_id": "b", "run_id": "r", "stream": "s", "created_at": "2026-01-01T00:00:00+00:00", "shards": [shard]}
    record = CommitRecord.from_json(json.dumps(body))
    assert record.shards[0].bytes == 0 and record.shards[0].landing is None and record.cost is None
