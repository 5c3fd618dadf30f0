"""Where a backfill starts, per shard (table of cases; the history case reads a real table)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kinesis_batch import Checkpoint, IllegalArgumentError, InvalidStateError, Lineage, Shard
from kinesis_batch.backfill.seed import seed
from kinesis_batch.backfill.starts import start_checkpoints
from kinesis_batch.checkpoints.history import HistoryEntry, HistoryTable
from kinesis_batch.leases.store import LeaseStore

LINEAGE = Lineage.build([Shard("A", ending_sequence_number="9"), Shard("B", "A"), Shard("C", "A")])
T0 = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "shards", "expected"),
    [
        ("trim_horizon", ["A", "B", "C"], dict.fromkeys("ABC", Checkpoint.trim_horizon())),
        ("at_timestamp=2026-11-22T03:00:00Z", ["B"], {"B": Checkpoint.at_timestamp(T0)}),
        ("after_sequence=12345", ["C"], {"C": Checkpoint.at("12345")}),
    ],
    ids=["trim-horizon", "timestamp", "sequence"],
)
def test_start_positions_per_shard(start: str, shards: list[str], expected: dict[str, Checkpoint]) -> None:
    assert start_checkpoints(start, LINEAGE, shards, None) == expected


@pytest.mark.parametrize(
    ("start", "shards", "says"),
    [
        ("latest", ["A"], "latest reads nothing old"),
        ("yesterday", ["A"], "is not trim_horizon"),
        ("after_sequence=12", ["B", "C"], "exactly one shard"),
        ("run=", ["A"], "needs a run id"),
        ("trim_horizon", ["Z"], "Z are not shards"),
    ],
)
def test_bad_starts_are_refused_with_a_clear_message(start: str, shards: list[str], says: str) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        start_checkpoints(start, LINEAGE, shards, None)


def test_start_from_a_run_uses_the_checkpoints_before_it(dynamodb: Any) -> None:
    history = HistoryTable(dynamodb, "t-main")
    history.create_if_not_exists()

    def commit(shard: str, run: str, at: datetime, before: Checkpoint, after: Checkpoint) -> None:
        entry = HistoryEntry(shard, f"batch-{run}-{shard}", run, "w", at, before, after, 1)
        dynamodb.put_item(TableName=history.table_name, Item=entry.to_item())

    commit("A", "r1", T0, Checkpoint.trim_horizon(), Checkpoint.shard_end())
    commit("B", "r1", T0, Checkpoint.trim_horizon(), Checkpoint.at("100"))
    commit("B", "r2", T0 + timedelta(hours=1), Checkpoint.at("100"), Checkpoint.at("200"))
    # C was not touched by r2: it starts where it stood before r2 committed (nothing yet).
    assert start_checkpoints("run=r2", LINEAGE, ["A", "B", "C"], history) == {
        "A": Checkpoint.shard_end(),
        "B": Checkpoint.at("100"),
        "C": Checkpoint.trim_horizon(),
    }
    with pytest.raises(InvalidStateError, match="no checkpoint history for run 'r9'"):
        start_checkpoints("run=r9", LINEAGE, ["A"], history)


def test_seeding_marks_unselected_shards_finished(dynamodb: Any) -> None:
    store = LeaseStore(dynamodb, "t-backfill")
    store.create_table_if_not_exists()
    seed(store, LINEAGE, {"B": Checkpoint.at("100")})
    leases = {lease.lease_key: lease for lease in store.list_leases()}
    assert leases["B"].checkpoint == Checkpoint.at("100")
    assert leases["A"].checkpoint.is_shard_end and leases["C"].checkpoint.is_shard_end
    assert leases["B"].parent_shard_ids == frozenset({"A"}) and leases["B"].lineage_depth == 1
