"""Checkpoint history on a real moto_server: a shard's commits in order, and a run's entries
across shards (where a backfill "from the checkpoint of run X" starts)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kinesis_batch.checkpoints.history import HistoryEntry, HistoryTable
from kinesis_batch.checkpoints.store import DynamoDBCheckpointStore
from kinesis_batch.control.waiting import Waited
from kinesis_batch.cost import ReadCost
from kinesis_batch.errors import MalformedLeaseError
from kinesis_batch.landing import Landing
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.shards.checkpoint import Checkpoint
from tests.checkpoints.support import HISTORY, TABLE, FakeClock, history_items, take

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def at(sequence_number: str, sub: int = 0) -> Checkpoint:
    return Checkpoint.at(sequence_number, sub)


def commit(
    store: DynamoDBCheckpointStore,
    lease: Lease,
    checkpoint: Checkpoint,
    batch_id: str,
    run_id: str | None = None,
    records: int = 0,
) -> Lease:
    """Prepare and commit one batch as a run does; returns the lease to fence the next write."""
    prepared = store.prepare(lease, checkpoint, batch_id)
    assert prepared is not None
    committed = store.commit(prepared, batch_id, run_id=run_id, records=records)
    assert committed is not None
    return committed


def test_for_shard_returns_the_commits_in_commit_order(store: DynamoDBCheckpointStore, worker_a: LeaseManager) -> None:
    # Batch ids sort against commit order, so an order by batch id would show.
    lease = take(worker_a, "shard-0")
    lease = commit(store, lease, at("100"), "z-batch", "run-1", records=3)
    lease = commit(store, lease, at("100", 4), "y-batch", "run-2", records=4)
    updated = store.update_checkpoint(lease, at("250"), run_id="run-3")
    assert updated is not None
    commit(store, updated, Checkpoint.shard_end(), "x-batch", "run-4", records=1)

    entries = store.history.for_shard("shard-0")

    assert [(e.from_checkpoint, e.to_checkpoint) for e in entries] == [
        (Checkpoint.trim_horizon(), at("100")),
        (at("100"), at("100", 4)),
        (at("100", 4), at("250")),
        (at("250"), Checkpoint.shard_end()),
    ]
    assert [e.run_id for e in entries] == ["run-1", "run-2", "run-3", "run-4"]
    assert [e.batch_id for e in entries][:2] == ["z-batch", "y-batch"]
    assert entries[3].batch_id == "x-batch"
    assert [e.records for e in entries] == [3, 4, 0, 1]
    assert {e.lease_key for e in entries} == {"shard-0"}
    assert {e.owner for e in entries} == {"worker-a"}
    assert [e.committed_at for e in entries] == sorted(e.committed_at for e in entries)
    assert store.history.for_shard("shard-1") == []


def test_for_shard_keeps_commit_order_within_one_millisecond(
    lease_store: LeaseStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    store = DynamoDBCheckpointStore(lease_store, clock=lambda: T0)  # every commit at the same instant
    store.create_checkpoint_store_if_not_exists()
    store.create_all_checkpoints_if_not_exists(["shard-0"])
    lease = take(worker_a, "shard-0")
    for batch_id, end in [("c", "10"), ("b", "20"), ("a", "30"), ("0", "40")]:
        lease = commit(store, lease, at(end), batch_id)

    entries = store.history.for_shard("shard-0")

    assert [e.to_checkpoint.value for e in entries] == ["10", "20", "30", "40"]
    assert len(history_items(dynamodb, "shard-0")) == 4
    assert {e.committed_at for e in entries} == {T0}


def test_for_shard_reads_every_page(lease_store: LeaseStore, clock: FakeClock, dynamodb: Any) -> None:
    # A DynamoDB page holds at most 1 MB: eight entries of 150 KB (a long owner) need two.
    store = DynamoDBCheckpointStore(lease_store)
    store.create_checkpoint_store_if_not_exists()
    store.create_all_checkpoints_if_not_exists(["shard-0"])
    worker = LeaseManager(lease_store, "w" * 150_000, clock=clock)
    lease = take(worker, "shard-0")
    for i in range(1, 9):
        lease = commit(store, lease, at(str(i)), f"batch-{i}", "run-big")
    first_page = dynamodb.query(
        TableName=HISTORY,
        KeyConditionExpression="leaseKey = :k",
        ExpressionAttributeValues={":k": {"S": "shard-0"}},
    )
    assert "LastEvaluatedKey" in first_page and len(first_page["Items"]) < 8

    entries = store.history.for_shard("shard-0")

    assert [e.to_checkpoint for e in entries] == [at(str(i)) for i in range(1, 9)]
    assert [e.from_checkpoint for e in entries[1:]] == [e.to_checkpoint for e in entries[:-1]]
    assert all(e.owner == worker.worker_id for e in entries)
    assert store.history.for_run("run-big") == entries


def test_for_run_returns_one_runs_entries_across_shards(store: DynamoDBCheckpointStore, worker_a: LeaseManager) -> None:
    shard_0 = take(worker_a, "shard-0")
    shard_1 = take(worker_a, "shard-1")
    # run-1 moves both shards, run-2 moves them further, run-3 only shard-1
    shard_0 = commit(store, shard_0, at("100"), "run-1-shard-0", "run-1", records=100)
    shard_1 = commit(store, shard_1, at("7", 2), "run-1-shard-1", "run-1", records=7)
    shard_0 = commit(store, shard_0, at("200"), "run-2-shard-0", "run-2", records=100)
    shard_1 = commit(store, shard_1, at("9"), "run-2-shard-1", "run-2", records=2)
    commit(store, shard_1, Checkpoint.shard_end(), "run-3-shard-1", "run-3", records=1)

    run_2 = store.history.for_run("run-2")

    assert [(e.lease_key, e.batch_id, e.from_checkpoint, e.to_checkpoint) for e in run_2] == [
        ("shard-0", "run-2-shard-0", at("100"), at("200")),
        ("shard-1", "run-2-shard-1", at("7", 2), at("9")),
    ]
    assert {e.run_id for e in run_2} == {"run-2"}
    # A backfill "from the checkpoint of run 2" starts each shard where run 2 started it,
    # and "after run 1" starts where run 1 left it: the same positions.
    start_of_run_2 = {e.lease_key: e.from_checkpoint for e in run_2}
    end_of_run_1 = {e.lease_key: e.to_checkpoint for e in store.history.for_run("run-1")}
    assert start_of_run_2 == end_of_run_1 == {"shard-0": at("100"), "shard-1": at("7", 2)}
    assert [(e.lease_key, e.to_checkpoint) for e in store.history.for_run("run-3")] == [
        ("shard-1", Checkpoint.shard_end())
    ]
    assert store.history.for_run("run-never") == []


def test_for_run_orders_by_shard_then_commit(store: DynamoDBCheckpointStore, worker_a: LeaseManager) -> None:
    # One run that committed two batches on a shard (e.g. a wave, then a retried range).
    shard_0 = take(worker_a, "shard-0")
    shard_1 = take(worker_a, "shard-1")
    shard_1 = commit(store, shard_1, at("5"), "b-2", "run-1")
    shard_0 = commit(store, shard_0, at("10"), "b-3", "run-1")
    commit(store, shard_0, at("20"), "b-1", "run-1")

    entries = store.history.for_run("run-1")

    assert [(e.lease_key, e.to_checkpoint.value) for e in entries] == [
        ("shard-0", "10"),
        ("shard-0", "20"),
        ("shard-1", "5"),
    ]


def test_entries_without_run_are_not_in_any_run(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    commit(store, take(worker_a, "shard-0"), at("100"), "batch-1")

    [item] = history_items(dynamodb, "shard-0")
    assert "runId" not in item
    assert [e.run_id for e in store.history.for_shard("shard-0")] == [None]
    assert store.history.for_run("") == []


def test_history_table_create_is_idempotent_and_exists_reflects_it(dynamodb: Any) -> None:
    history = HistoryTable(dynamodb, TABLE)
    assert history.table_name == HISTORY
    assert not history.exists()

    assert history.create_if_not_exists() is True
    assert history.create_if_not_exists() is False
    assert history.exists()

    history.delete()
    assert not history.exists()


@pytest.mark.parametrize(
    ("from_checkpoint", "to_checkpoint", "run_id"),
    [
        (Checkpoint.at_timestamp(T0), at("49654729452330913123045372539046218240829120392467759106", 3), "run-1"),
        (Checkpoint.trim_horizon(), Checkpoint.shard_end(), None),
        (Checkpoint.latest(), at("0"), "run-2"),
    ],
    ids=["AT_TIMESTAMP to 56 digits.3", "TRIM_HORIZON to SHARD_END", "LATEST to 0"],
)
def test_entry_round_trips_through_the_table(
    dynamodb: Any, from_checkpoint: Checkpoint, to_checkpoint: Checkpoint, run_id: str | None
) -> None:
    history = HistoryTable(dynamodb, TABLE)
    history.create_if_not_exists()
    entry = HistoryEntry(
        lease_key="stream-a:shardId-000000000001",
        batch_id="batch-1",
        run_id=run_id,
        owner="worker-a",
        committed_at=T0,
        from_checkpoint=from_checkpoint,
        to_checkpoint=to_checkpoint,
        records=42,
        lease_counter=17,
        lag_at_start_ms=None if run_id is None else 90_061,  # entries written before lags were kept have none
        # a routed decoding run's: its rows per table too, and of a stream of changes what they did in each
        landing=Landing(
            40,
            2,
            0,
            {"route: no route": 2},
            tables={"click": 25, "view": 15},
            table_changes={"click": {"inserted": 20, "superseded": 5}, "view": {"updated": 15}},
        )
        if run_id
        else None,
        cost=ReadCost("00job", "00app", 0.0667, 0.2667, 0.3333) if run_id else None,  # read by a job run
        control_plane=Waited(throttles=14, failures=2, seconds=9.25) if run_id else None,  # met the account's limits
    )
    dynamodb.transact_write_items(TransactItems=[history.put_request(entry)])

    assert history.for_shard(entry.lease_key) == [entry]
    # recorded once: the same commit again is refused by the table
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=[history.put_request(entry)])
    assert len(history_items(dynamodb, entry.lease_key)) == 1


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param({"records"}, id="no records"),
        pytest.param({"toCheckpoint"}, id="no to checkpoint"),
        pytest.param({"fromCheckpointTimestamp"}, id="AT_TIMESTAMP without its timestamp"),
    ],
)
def test_malformed_history_item_raises_malformed_lease_error(broken: set[str]) -> None:
    entry = HistoryEntry(
        lease_key="shard-0",
        batch_id="b",
        run_id=None,
        owner="w",
        committed_at=T0,
        from_checkpoint=Checkpoint.at_timestamp(T0),
        to_checkpoint=at("5"),
        records=1,
    )
    item = {name: value for name, value in entry.to_item().items() if name not in broken}

    with pytest.raises(MalformedLeaseError):
        HistoryEntry.from_item(item)
