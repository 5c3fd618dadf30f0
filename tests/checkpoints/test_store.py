"""DynamoDBCheckpointStore on a real moto_server: EventProcessorHost-style operations and the
two-phase prepare/commit of a run, fenced by leaseOwner + leaseCounter.

Every assertion about what was stored reads the item back from DynamoDB.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from kinesis_batch.checkpoints.store import MAX_BATCH_ID_BYTES, CheckpointStore, DynamoDBCheckpointStore
from kinesis_batch.errors import (
    CheckpointOrderError,
    IllegalArgumentError,
    InvalidStateError,
    LeaseTableNotFoundError,
)
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.shards.checkpoint import Checkpoint
from tests.checkpoints.support import (
    HISTORY,
    TABLE,
    FakeClock,
    history_items,
    lease_item,
    table_names,
    take,
    take_over,
)

SEQ_56 = "49654729452330913123045372539046218240829120392467759106"  # as AWS sends them
SEQ_56_NEXT = "49654729452330913123045372539046218240829120392467759999"
T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
PENDING_ATTRIBUTES = {"pendingCheckpoint", "pendingCheckpointSubSequenceNumber", "pendingBatchId"}


def at(sequence_number: str, sub: int = 0) -> Checkpoint:
    return Checkpoint.at(sequence_number, sub)


def counter(dynamodb: Any, lease_key: str) -> int:
    item = lease_item(dynamodb, lease_key)
    assert item is not None
    return int(item["leaseCounter"]["N"])


def stored_checkpoint(dynamodb: Any, lease_key: str) -> tuple[str, str]:
    item = lease_item(dynamodb, lease_key)
    assert item is not None
    return item["checkpoint"]["S"], item["checkpointSubSequenceNumber"]["N"]


# -- the store itself ----------------------------------------------------------------------------


def test_checkpoint_store_exists_only_after_it_is_created(lease_store: LeaseStore, dynamodb: Any) -> None:
    store: CheckpointStore = DynamoDBCheckpointStore(lease_store)
    assert not store.checkpoint_store_exists()
    assert not {TABLE, HISTORY} & table_names(dynamodb)

    store.create_checkpoint_store_if_not_exists()

    assert store.checkpoint_store_exists()
    assert {TABLE, HISTORY} <= table_names(dynamodb)
    for name in (TABLE, HISTORY):
        assert dynamodb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE"
    history_keys = dynamodb.describe_table(TableName=HISTORY)["Table"]["KeySchema"]
    assert {(k["AttributeName"], k["KeyType"]) for k in history_keys} == {("leaseKey", "HASH"), ("commitId", "RANGE")}


def test_creating_the_checkpoint_store_again_keeps_its_checkpoints(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = take(worker_a, "shard-0")
    assert store.update_checkpoint(lease, at("100")) is not None
    before = (lease_item(dynamodb, "shard-0"), history_items(dynamodb))

    store.create_checkpoint_store_if_not_exists()

    assert store.checkpoint_store_exists()
    assert (lease_item(dynamodb, "shard-0"), history_items(dynamodb)) == before


def test_lease_table_without_history_table_is_not_a_complete_store(lease_store: LeaseStore, dynamodb: Any) -> None:
    lease_store.create_table_if_not_exists()
    lease_store.create_lease_if_not_exists(Lease("shard-0", checkpoint=Checkpoint.at("42")))
    store = DynamoDBCheckpointStore(lease_store)
    assert not store.checkpoint_store_exists()

    store.create_checkpoint_store_if_not_exists()

    assert store.checkpoint_store_exists()
    assert HISTORY in table_names(dynamodb)
    assert stored_checkpoint(dynamodb, "shard-0") == ("42", "0")


@pytest.mark.parametrize(
    ("initial", "expected_attributes"),
    [
        pytest.param(None, {"checkpoint": {"S": "TRIM_HORIZON"}}, id="default TRIM_HORIZON"),
        pytest.param(Checkpoint.latest(), {"checkpoint": {"S": "LATEST"}}, id="LATEST"),
        pytest.param(
            Checkpoint.at_timestamp(T0),
            {"checkpoint": {"S": "AT_TIMESTAMP"}, "checkpointTimestamp": {"S": T0.isoformat()}},
            id="AT_TIMESTAMP",
        ),
    ],
)
def test_create_all_checkpoints_puts_every_partition_at_the_initial_checkpoint(
    lease_store: LeaseStore, dynamodb: Any, initial: Checkpoint | None, expected_attributes: dict[str, Any]
) -> None:
    store = DynamoDBCheckpointStore(lease_store, initial=initial)
    store.create_checkpoint_store_if_not_exists()

    store.create_all_checkpoints_if_not_exists(["shard-0", "shard-1", "shard-2"])

    for key in ("shard-0", "shard-1", "shard-2"):
        item = lease_item(dynamodb, key)
        assert item is not None
        assert {name: item[name] for name in expected_attributes} == expected_attributes
        assert item["checkpointSubSequenceNumber"] == {"N": "0"}
        assert "leaseOwner" not in item
        assert not PENDING_ATTRIBUTES & item.keys()
        assert store.get_checkpoint(key) == (initial or Checkpoint.trim_horizon())
    assert dynamodb.scan(TableName=TABLE, Select="COUNT")["Count"] == 3


def test_create_all_checkpoints_does_not_overwrite_an_existing_checkpoint(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = take(worker_a, "shard-0")
    assert store.update_checkpoint(lease, at("100", 2)) is not None
    before = lease_item(dynamodb, "shard-0")

    store.create_all_checkpoints_if_not_exists(["shard-0", "shard-1", "shard-2"])

    assert lease_item(dynamodb, "shard-0") == before
    assert store.get_checkpoint("shard-0") == at("100", 2)
    assert store.get_checkpoint("shard-2") == Checkpoint.trim_horizon()


def test_get_checkpoint_of_an_unknown_partition_is_none(store: DynamoDBCheckpointStore) -> None:
    assert store.get_checkpoint("shard-never-seen") is None


def test_get_checkpoint_reads_what_the_table_holds(store: DynamoDBCheckpointStore, dynamodb: Any) -> None:
    dynamodb.put_item(
        TableName=TABLE,
        Item={
            "leaseKey": {"S": "shard-9"},
            "leaseCounter": {"N": "7"},
            "checkpoint": {"S": SEQ_56},
            "checkpointSubSequenceNumber": {"N": "3"},
        },
    )
    assert store.get_checkpoint("shard-9") == at(SEQ_56, 3)


def test_update_checkpoint_moves_it_fenced_and_records_history(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = take(worker_a, "shard-0")

    updated = store.update_checkpoint(lease, at(SEQ_56, 4), run_id="run-1")

    assert updated is not None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert (item["checkpoint"], item["checkpointSubSequenceNumber"]) == ({"S": SEQ_56}, {"N": "4"})
    assert item["leaseCounter"] == {"N": str(lease.lease_counter + 1)}
    assert item["leaseOwner"] == {"S": "worker-a"}
    assert item["ownerSwitchesSinceCheckpoint"] == {"N": "0"}
    assert item["lastRunId"] == {"S": "run-1"}
    assert updated == Lease.from_item(item)
    [entry] = history_items(dynamodb, "shard-0")
    assert entry["fromCheckpoint"] == {"S": "TRIM_HORIZON"}
    assert (entry["toCheckpoint"], entry["toCheckpointSubSequenceNumber"]) == ({"S": SEQ_56}, {"N": "4"})
    assert entry["runId"] == {"S": "run-1"}
    assert entry["batchId"] == item["lastBatchId"]
    assert entry["owner"] == {"S": "worker-a"}


def test_update_checkpoint_with_a_lost_lease_changes_nothing(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, worker_b: LeaseManager, clock: FakeClock, dynamodb: Any
) -> None:
    stale = take(worker_a, "shard-0")
    take_over(worker_a, worker_b, clock, "shard-0")
    before = lease_item(dynamodb, "shard-0")

    assert store.update_checkpoint(stale, at("100")) is None

    assert lease_item(dynamodb, "shard-0") == before
    assert history_items(dynamodb) == []


def test_update_checkpoint_backwards_is_refused(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = store.update_checkpoint(take(worker_a, "shard-0"), at("100"))
    assert lease is not None
    before = lease_item(dynamodb, "shard-0")

    with pytest.raises(CheckpointOrderError):
        store.update_checkpoint(lease, at("99"))

    assert lease_item(dynamodb, "shard-0") == before
    assert len(history_items(dynamodb, "shard-0")) == 1


def test_update_checkpoint_to_the_same_place_is_allowed(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = store.update_checkpoint(take(worker_a, "shard-0"), at("100"))
    assert lease is not None

    assert store.update_checkpoint(lease, at("100")) is not None

    assert stored_checkpoint(dynamodb, "shard-0") == ("100", "0")


def test_update_checkpoint_while_a_batch_is_pending_is_refused(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    prepared = store.prepare(take(worker_a, "shard-0"), at("100"), "batch-1")
    assert prepared is not None
    before = lease_item(dynamodb, "shard-0")

    with pytest.raises(InvalidStateError, match="batch-1"):
        store.update_checkpoint(prepared, at("50"))

    assert lease_item(dynamodb, "shard-0") == before
    assert history_items(dynamodb) == []


def test_update_checkpoint_of_a_lease_nobody_holds_is_refused(
    store: DynamoDBCheckpointStore, lease_store: LeaseStore, dynamodb: Any
) -> None:
    free = lease_store.get_lease("shard-0")
    assert free is not None and free.lease_owner is None
    before = lease_item(dynamodb, "shard-0")

    with pytest.raises(IllegalArgumentError):
        store.update_checkpoint(free, at("100"))

    assert lease_item(dynamodb, "shard-0") == before
    assert history_items(dynamodb) == []


def test_commit_without_run_id_does_not_leave_the_previous_run_id(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = store.update_checkpoint(take(worker_a, "shard-0"), at("100"), run_id="run-1")
    assert lease is not None

    lease = store.update_checkpoint(lease, at("200"))

    assert lease is not None and lease.last_run_id is None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert "lastRunId" not in item
    assert lease == Lease.from_item(item)


def test_delete_checkpoint_removes_the_partition_and_keeps_its_history(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    assert store.update_checkpoint(take(worker_a, "shard-0"), at("100")) is not None

    store.delete_checkpoint("shard-0")

    assert lease_item(dynamodb, "shard-0") is None
    assert store.get_checkpoint("shard-0") is None
    assert store.get_checkpoint("shard-1") == Checkpoint.trim_horizon()
    assert len(history_items(dynamodb, "shard-0")) == 1


def test_delete_checkpoint_store_drops_both_tables(store: DynamoDBCheckpointStore, dynamodb: Any) -> None:
    store.delete_checkpoint_store()

    assert not {TABLE, HISTORY} & table_names(dynamodb)
    assert not store.checkpoint_store_exists()
    with pytest.raises(LeaseTableNotFoundError):
        store.get_checkpoint("shard-0")


# -- two-phase: prepare, commit, abort ----------------------------------------------------------


def test_prepare_records_the_pending_batch_and_leaves_the_checkpoint(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = take(worker_a, "shard-0")

    prepared = store.prepare(lease, at(SEQ_56, 2), "batch-1", read_through=at(SEQ_56, 2))

    assert prepared is not None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert item["checkpoint"] == {"S": "TRIM_HORIZON"}
    assert item["pendingCheckpoint"] == {"S": SEQ_56}
    assert item["pendingCheckpointSubSequenceNumber"] == {"N": "2"}
    assert item["pendingBatchId"] == {"S": "batch-1"}
    assert item["leaseCounter"] == {"N": str(lease.lease_counter + 1)}
    assert prepared == Lease.from_item(item)
    assert history_items(dynamodb) == []


def test_prepare_then_commit_moves_the_checkpoint_and_appends_exactly_one_history_entry(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = take(worker_a, "shard-0")
    assert lease.owner_switches_since_checkpoint > 0  # taking a lease counts as a switch
    prepared = store.prepare(lease, at(SEQ_56, 2), "batch-1", read_through=at(SEQ_56_NEXT))
    assert prepared is not None

    committed = store.commit(prepared, "batch-1", run_id="run-1", records=1234)

    assert committed is not None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert (item["checkpoint"], item["checkpointSubSequenceNumber"]) == ({"S": SEQ_56}, {"N": "2"})
    assert not PENDING_ATTRIBUTES & item.keys()
    assert item["ownerSwitchesSinceCheckpoint"] == {"N": "0"}
    assert item["leaseCounter"] == {"N": str(prepared.lease_counter + 1)}
    assert item["leaseOwner"] == {"S": "worker-a"}
    assert item["lastBatchId"] == {"S": "batch-1"}
    assert item["lastRunId"] == {"S": "run-1"}
    assert committed == Lease.from_item(item)  # the next fenced write uses the stored counter

    [entry] = history_items(dynamodb, "shard-0")
    assert entry["batchId"] == {"S": "batch-1"}
    assert entry["runId"] == {"S": "run-1"}
    assert entry["owner"] == {"S": "worker-a"}
    assert entry["records"] == {"N": "1234"}
    assert entry["fromCheckpoint"] == {"S": "TRIM_HORIZON"}
    assert (entry["toCheckpoint"], entry["toCheckpointSubSequenceNumber"]) == ({"S": SEQ_56}, {"N": "2"})
    assert datetime.fromisoformat(entry["committedAt"]["S"]).tzinfo is not None
    assert history_items(dynamodb, "shard-1") == []


def test_a_prepare_that_renews_moves_the_expiry_in_the_same_write(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, clock: FakeClock, dynamodb: Any
) -> None:
    lease = take(worker_a, "shard-0")
    clock.advance(20)

    prepared = store.prepare(lease, at(SEQ_56), "batch-1", renew_until_ms=worker_a.expiry())

    item = lease_item(dynamodb, "shard-0")
    assert prepared is not None and item is not None and prepared == Lease.from_item(item)
    assert prepared.expires_at_ms == worker_a.expiry() > (lease.expires_at_ms or 0)
    assert item["leaseCounter"] == {"N": str(lease.lease_counter + 1)}


def test_a_commit_that_releases_gives_the_lease_up_with_the_move_and_the_manager_lets_it_go(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    take(worker_a, "shard-0")
    worker_a.write_each(["shard-0"], lambda lease: store.prepare(lease, at(SEQ_56), "batch-1"))

    worker_a.write_each(["shard-0"], lambda lease: store.commit(lease, "batch-1", run_id="run-1", release=True))

    item = lease_item(dynamodb, "shard-0")
    assert item is not None and "leaseOwner" not in item and "leaseExpiresAt" not in item
    assert item["checkpoint"] == {"S": SEQ_56} and item["lastBatchId"] == {"S": "batch-1"}
    assert [entry["batchId"]["S"] for entry in history_items(dynamodb, "shard-0")] == ["batch-1"]
    assert worker_a.held() == {} and worker_a.lost_leases() == set()  # released, not lost
    assert worker_a.release() == []  # nothing left to release: no call


def test_commit_result_fences_the_next_batch(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = take(worker_a, "shard-0")
    for batch, end in [("batch-1", "100"), ("batch-2", "200"), ("batch-3", "300")]:
        prepared = store.prepare(lease, at(end), batch)
        assert prepared is not None
        committed = store.commit(prepared, batch)
        assert committed is not None
        lease = committed

    assert stored_checkpoint(dynamodb, "shard-0") == ("300", "0")
    assert [i["batchId"]["S"] for i in history_items(dynamodb, "shard-0")] == ["batch-1", "batch-2", "batch-3"]


def test_prepare_is_idempotent_for_the_same_batch(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    first = store.prepare(take(worker_a, "shard-0"), at("100"), "batch-1")
    assert first is not None

    again = store.prepare(first, at("100"), "batch-1", read_through=at("150"))

    assert again is not None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert (item["pendingBatchId"], item["pendingCheckpoint"]) == ({"S": "batch-1"}, {"S": "100"})
    assert item["checkpoint"] == {"S": "TRIM_HORIZON"}
    assert store.commit(again, "batch-1") is not None
    assert len(history_items(dynamodb, "shard-0")) == 1


def test_preparing_the_pending_batch_again_replaces_its_checkpoint(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    # A run marks its batch before reading, and prepares it again once it knows the end.
    lease = store.update_checkpoint(take(worker_a, "shard-0"), at("100"))
    assert lease is not None
    marked = store.prepare(lease, lease.checkpoint, "batch-2")
    assert marked is not None

    ended = store.prepare(marked, at("300", 1), "batch-2", read_through=at("300", 1))

    assert ended is not None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert (item["pendingBatchId"], item["pendingCheckpoint"]) == ({"S": "batch-2"}, {"S": "300"})
    assert item["pendingCheckpointSubSequenceNumber"] == {"N": "1"}
    assert item["checkpoint"] == {"S": "100"}
    assert store.commit(ended, "batch-2") is not None
    assert stored_checkpoint(dynamodb, "shard-0") == ("300", "1")
    assert [i["batchId"]["S"] for i in history_items(dynamodb, "shard-0")][1:] == ["batch-2"]


def test_second_batch_while_one_is_pending_is_refused(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    prepared = store.prepare(take(worker_a, "shard-0"), at("100"), "batch-1")
    assert prepared is not None
    before = lease_item(dynamodb, "shard-0")

    with pytest.raises(InvalidStateError, match="batch-1"):
        store.prepare(prepared, at("200"), "batch-2")

    assert lease_item(dynamodb, "shard-0") == before


@pytest.mark.parametrize(
    ("target", "read_through", "error"),
    [
        pytest.param(at("201"), at("200"), CheckpointOrderError, id="beyond the last record read"),
        pytest.param(at("200", 1), at("200"), CheckpointOrderError, id="beyond the last sub-record read"),
        pytest.param(Checkpoint.shard_end(), at("200"), CheckpointOrderError, id="SHARD_END before the end"),
        pytest.param(at("99"), None, CheckpointOrderError, id="backwards"),
        pytest.param(at("100"), at("99"), CheckpointOrderError, id="read nothing new, checkpoint beyond it"),
        pytest.param(Checkpoint.latest(), None, CheckpointOrderError, id="to a start position"),
    ],
)
def test_prepare_that_is_refused_writes_nothing(
    store: DynamoDBCheckpointStore,
    worker_a: LeaseManager,
    dynamodb: Any,
    target: Checkpoint,
    read_through: Checkpoint | None,
    error: type[Exception],
) -> None:
    lease = store.update_checkpoint(take(worker_a, "shard-0"), at("100"))
    assert lease is not None
    before = (lease_item(dynamodb, "shard-0"), history_items(dynamodb))

    with pytest.raises(error):
        store.prepare(lease, target, "batch-2", read_through=read_through)

    assert (lease_item(dynamodb, "shard-0"), history_items(dynamodb)) == before


@pytest.mark.parametrize(
    "initial",
    [Checkpoint.trim_horizon(), Checkpoint.latest(), Checkpoint.at_timestamp(T0)],
    ids=["TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"],
)
def test_batch_that_stays_at_a_start_position_records_only_its_batch_and_keeps_the_checkpoint(
    lease_store: LeaseStore, worker_a: LeaseManager, dynamodb: Any, initial: Checkpoint
) -> None:
    # The first run marks its batch at the initial position (and a shard with nothing to read
    # ends there). A pending AT_TIMESTAMP would have no timestamp: the item would no longer
    # parse, and every scan of the lease table would fail on it.
    store = DynamoDBCheckpointStore(lease_store, initial=initial)
    store.create_checkpoint_store_if_not_exists()
    store.create_all_checkpoints_if_not_exists(["shard-0"])
    lease = take(worker_a, "shard-0")
    initial_item = lease_item(dynamodb, "shard-0")
    assert initial_item is not None

    marked = store.prepare(lease, initial, "batch-1")

    assert marked is not None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert item["pendingBatchId"] == {"S": "batch-1"}
    assert "pendingCheckpoint" not in item and "pendingCheckpointSubSequenceNumber" not in item
    assert {k: v for k, v in item.items() if k.startswith("checkpoint")} == {
        k: v for k, v in initial_item.items() if k.startswith("checkpoint")
    }
    [listed] = lease_store.list_leases()
    assert (listed.pending_batch_id, listed.pending_checkpoint, listed.checkpoint) == ("batch-1", None, initial)

    committed = store.commit(marked, "batch-1", run_id="run-1")

    assert committed is not None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert not PENDING_ATTRIBUTES & item.keys()
    assert {k: v for k, v in item.items() if k.startswith("checkpoint")} == {
        k: v for k, v in initial_item.items() if k.startswith("checkpoint")
    }
    assert committed == Lease.from_item(item)
    [entry] = store.history.for_shard("shard-0")
    assert (entry.from_checkpoint, entry.to_checkpoint, entry.run_id) == (initial, initial, "run-1")


@pytest.mark.parametrize(
    "target",
    [Checkpoint.trim_horizon(), Checkpoint.latest(), Checkpoint.at_timestamp(T0 + timedelta(hours=1))],
    ids=["TRIM_HORIZON", "LATEST", "later AT_TIMESTAMP"],
)
def test_prepare_to_another_start_position_is_refused(
    lease_store: LeaseStore, worker_a: LeaseManager, dynamodb: Any, target: Checkpoint
) -> None:
    store = DynamoDBCheckpointStore(lease_store, initial=Checkpoint.at_timestamp(T0))
    store.create_checkpoint_store_if_not_exists()
    store.create_all_checkpoints_if_not_exists(["shard-0"])
    lease = take(worker_a, "shard-0")
    before = lease_item(dynamodb, "shard-0")

    with pytest.raises(CheckpointOrderError):
        store.prepare(lease, target, "batch-1")

    assert lease_item(dynamodb, "shard-0") == before


@pytest.mark.parametrize(
    "batch_id",
    ["", "b" * (MAX_BATCH_ID_BYTES + 1), "\u00e9" * (MAX_BATCH_ID_BYTES // 2 + 1)],
    ids=["empty", "too long", "too many UTF-8 bytes"],
)
def test_prepare_with_an_unusable_batch_id_is_refused(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any, batch_id: str
) -> None:
    # A batch id that could not be committed (it is part of the history's range key) is
    # refused before any output is written for it.
    lease = take(worker_a, "shard-0")
    before = lease_item(dynamodb, "shard-0")

    with pytest.raises(IllegalArgumentError):
        store.prepare(lease, at("100"), batch_id)

    assert lease_item(dynamodb, "shard-0") == before


def test_longest_batch_id_can_be_committed(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    batch_id = "\u00e9" * (MAX_BATCH_ID_BYTES // 2)
    prepared = store.prepare(take(worker_a, "shard-0"), at("100"), batch_id)
    assert prepared is not None

    assert store.commit(prepared, batch_id) is not None

    assert [i["batchId"]["S"] for i in history_items(dynamodb, "shard-0")] == [batch_id]


@pytest.mark.parametrize("batch_id", ["batch-2", "", "BATCH-1"])
def test_commit_of_another_batch_than_the_pending_one_is_refused(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any, batch_id: str
) -> None:
    prepared = store.prepare(take(worker_a, "shard-0"), at("100"), "batch-1")
    assert prepared is not None
    before = lease_item(dynamodb, "shard-0")

    with pytest.raises(InvalidStateError):
        store.commit(prepared, batch_id)

    assert lease_item(dynamodb, "shard-0") == before
    assert history_items(dynamodb) == []


def test_commit_without_a_prepared_batch_is_refused(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = take(worker_a, "shard-0")
    before = lease_item(dynamodb, "shard-0")

    with pytest.raises(InvalidStateError):
        store.commit(lease, "batch-1")

    assert lease_item(dynamodb, "shard-0") == before
    assert history_items(dynamodb) == []


def test_commit_is_all_or_nothing_when_the_history_cannot_be_written(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    prepared = store.prepare(take(worker_a, "shard-0"), at("100"), "batch-1")
    assert prepared is not None
    before = lease_item(dynamodb, "shard-0")
    dynamodb.delete_table(TableName=HISTORY)

    with pytest.raises(InvalidStateError):
        store.commit(prepared, "batch-1")

    assert lease_item(dynamodb, "shard-0") == before


def test_abort_clears_the_pending_batch_and_leaves_the_checkpoint(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    lease = store.update_checkpoint(take(worker_a, "shard-0"), at("100", 1))
    assert lease is not None
    prepared = store.prepare(lease, at("200"), "batch-2")
    assert prepared is not None

    aborted = store.abort(prepared, "batch-2")

    assert aborted is not None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert not PENDING_ATTRIBUTES & item.keys()
    assert (item["checkpoint"], item["checkpointSubSequenceNumber"]) == ({"S": "100"}, {"N": "1"})
    assert item["leaseCounter"] == {"N": str(prepared.lease_counter + 1)}
    assert aborted == Lease.from_item(item)
    assert len(history_items(dynamodb, "shard-0")) == 1  # only the update, nothing for batch-2
    # the batch is read again under a new id
    assert store.prepare(aborted, at("150"), "batch-3") is not None


def test_abort_of_a_batch_that_is_not_pending_changes_nothing(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    prepared = store.prepare(take(worker_a, "shard-0"), at("100"), "batch-1")
    assert prepared is not None
    before = lease_item(dynamodb, "shard-0")

    assert store.abort(prepared, "batch-other") == prepared

    assert lease_item(dynamodb, "shard-0") == before


# -- fencing: a worker that lost its lease moves nothing ----------------------------------------


def test_prepare_of_a_worker_that_lost_its_lease_returns_none_and_writes_nothing(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, worker_b: LeaseManager, clock: FakeClock, dynamodb: Any
) -> None:
    stale = take(worker_a, "shard-0")
    take_over(worker_a, worker_b, clock, "shard-0")
    before = lease_item(dynamodb, "shard-0")

    assert store.prepare(stale, at("100"), "batch-a") is None

    assert lease_item(dynamodb, "shard-0") == before
    assert history_items(dynamodb) == []


def test_commit_of_a_worker_that_lost_its_lease_returns_none_and_moves_nothing(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, worker_b: LeaseManager, clock: FakeClock, dynamodb: Any
) -> None:
    prepared = store.prepare(take(worker_a, "shard-0"), at("100"), "batch-a")
    assert prepared is not None
    take_over(worker_a, worker_b, clock, "shard-0")
    before = lease_item(dynamodb, "shard-0")

    assert store.commit(prepared, "batch-a", run_id="run-a") is None
    assert store.abort(prepared, "batch-a") is None

    assert lease_item(dynamodb, "shard-0") == before
    assert stored_checkpoint(dynamodb, "shard-0") == ("TRIM_HORIZON", "0")
    assert history_items(dynamodb) == []


def test_new_owner_rolls_forward_the_batch_a_dead_owner_prepared(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, worker_b: LeaseManager, clock: FakeClock, dynamodb: Any
) -> None:
    dead = store.prepare(take(worker_a, "shard-0"), at(SEQ_56, 5), "batch-a")
    assert dead is not None  # worker-a published batch-a's output, then died before committing

    recovered = take_over(worker_a, worker_b, clock, "shard-0")
    assert recovered.pending_batch_id == "batch-a"
    assert recovered.pending_checkpoint == at(SEQ_56, 5)
    assert recovered.owner_switches_since_checkpoint > dead.owner_switches_since_checkpoint

    committed = store.commit(recovered, "batch-a", run_id="run-a", records=10)

    assert committed is not None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert (item["checkpoint"], item["checkpointSubSequenceNumber"]) == ({"S": SEQ_56}, {"N": "5"})
    assert item["leaseOwner"] == {"S": "worker-b"}
    assert item["ownerSwitchesSinceCheckpoint"] == {"N": "0"}
    assert not PENDING_ATTRIBUTES & item.keys()
    [entry] = history_items(dynamodb, "shard-0")
    assert (entry["batchId"], entry["owner"]) == ({"S": "batch-a"}, {"S": "worker-b"})

    # the dead owner wakes up and replays its commit: refused, no second entry
    assert store.commit(dead, "batch-a", run_id="run-a") is None
    assert lease_item(dynamodb, "shard-0") == item
    assert len(history_items(dynamodb, "shard-0")) == 1


def test_new_owner_can_abort_the_batch_a_dead_owner_prepared(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, worker_b: LeaseManager, clock: FakeClock, dynamodb: Any
) -> None:
    assert store.prepare(take(worker_a, "shard-0"), at("100"), "batch-a") is not None
    recovered = take_over(worker_a, worker_b, clock, "shard-0")

    assert store.abort(recovered, "batch-a") is not None

    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert not PENDING_ATTRIBUTES & item.keys()
    assert item["checkpoint"] == {"S": "TRIM_HORIZON"}
    assert history_items(dynamodb) == []


def test_commit_replayed_with_the_stale_lease_returns_none(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    prepared = store.prepare(take(worker_a, "shard-0"), at("100"), "batch-1")
    assert prepared is not None
    assert store.commit(prepared, "batch-1", run_id="run-1") is not None
    after_first = lease_item(dynamodb, "shard-0")

    assert store.commit(prepared, "batch-1", run_id="run-1") is None

    assert lease_item(dynamodb, "shard-0") == after_first
    assert len(history_items(dynamodb, "shard-0")) == 1


def test_commit_fenced_by_a_renewed_lease_counter(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any
) -> None:
    prepared = store.prepare(take(worker_a, "shard-0"), at("100"), "batch-1")
    assert prepared is not None
    renewed = store.leases.renew_lease(prepared, 2_000_000_000_000)  # e.g. by the renewer thread
    assert renewed is not None

    assert store.commit(prepared, "batch-1") is None  # same owner, old counter
    assert stored_checkpoint(dynamodb, "shard-0") == ("TRIM_HORIZON", "0")
    assert store.commit(renewed, "batch-1") is not None
    assert stored_checkpoint(dynamodb, "shard-0") == ("100", "0")
    assert len(history_items(dynamodb, "shard-0")) == 1


# -- values round-trip ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(at("7"), id="small"),
        pytest.param(at(SEQ_56, 0), id="56 digits"),
        pytest.param(at(SEQ_56, 2**31), id="56 digits with a large sub-sequence"),
        pytest.param(at(str(2**128), 9), id="above 128 bits"),
        pytest.param(at("9" * 129, 1), id="129 digits"),
        pytest.param(Checkpoint.shard_end(), id="SHARD_END"),
    ],
)
def test_committed_checkpoint_round_trips(
    store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any, target: Checkpoint
) -> None:
    prepared = store.prepare(take(worker_a, "shard-0"), target, "batch-1", read_through=Checkpoint.shard_end())
    assert prepared is not None
    assert prepared.pending_checkpoint == target
    assert store.commit(prepared, "batch-1", run_id="run-1") is not None

    assert stored_checkpoint(dynamodb, "shard-0") == (target.value, str(target.sub_sequence_number))
    assert store.get_checkpoint("shard-0") == target
    [entry] = store.history.for_shard("shard-0")
    assert entry.to_checkpoint == target
    assert entry.from_checkpoint == Checkpoint.trim_horizon()


def test_shard_end_is_final(store: DynamoDBCheckpointStore, worker_a: LeaseManager, dynamodb: Any) -> None:
    prepared = store.prepare(
        take(worker_a, "shard-0"), Checkpoint.shard_end(), "b1", read_through=Checkpoint.shard_end()
    )
    assert prepared is not None
    committed = store.commit(prepared, "b1")
    assert committed is not None
    checkpoint = store.get_checkpoint("shard-0")
    assert checkpoint is not None and checkpoint.is_shard_end and checkpoint.start_position() is None

    with pytest.raises(CheckpointOrderError):
        store.prepare(committed, at(SEQ_56), "b2")
    assert stored_checkpoint(dynamodb, "shard-0") == ("SHARD_END", "0")


@pytest.mark.parametrize(
    "timestamp",
    [T0, T0.astimezone(timezone(timedelta(hours=-7)))],
    ids=["UTC", "UTC-7"],
)
def test_at_timestamp_checkpoint_round_trips_and_its_timestamp_goes_when_it_moves(
    lease_store: LeaseStore, worker_a: LeaseManager, dynamodb: Any, timestamp: datetime
) -> None:
    store = DynamoDBCheckpointStore(lease_store, initial=Checkpoint.at_timestamp(timestamp))
    store.create_checkpoint_store_if_not_exists()
    store.create_all_checkpoints_if_not_exists(["shard-0"])
    lease = take(worker_a, "shard-0")
    assert lease.checkpoint == Checkpoint.at_timestamp(timestamp)
    assert store.get_checkpoint("shard-0") == Checkpoint.at_timestamp(T0)
    still = store.update_checkpoint(lease, Checkpoint.at_timestamp(timestamp))  # staying is allowed
    assert still is not None
    item = lease_item(dynamodb, "shard-0")
    assert item is not None and datetime.fromisoformat(item["checkpointTimestamp"]["S"]) == T0

    prepared = store.prepare(still, at("100", 3), "batch-1")
    assert prepared is not None
    assert store.commit(prepared, "batch-1") is not None

    item = lease_item(dynamodb, "shard-0")
    assert item is not None
    assert item["checkpoint"] == {"S": "100"}
    assert "checkpointTimestamp" not in item
    assert store.get_checkpoint("shard-0") == at("100", 3)
    entries = store.history.for_shard("shard-0")
    assert [e.from_checkpoint for e in entries] == [Checkpoint.at_timestamp(T0), Checkpoint.at_timestamp(T0)]
    assert [e.to_checkpoint for e in entries] == [Checkpoint.at_timestamp(T0), at("100", 3)]
    assert datetime.fromisoformat(history_items(dynamodb, "shard-0")[0]["fromCheckpointTimestamp"]["S"]) == T0
