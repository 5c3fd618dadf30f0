"""LeaseStore against a real moto_server: every write is read back from the table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from devkit.stack import LOOPBACK, free_port

from kinesis_batch import aws
from kinesis_batch._backoff import Backoff
from kinesis_batch.errors import DependencyError, IllegalArgumentError, LeaseTableNotFoundError, MalformedLeaseError
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.shards.checkpoint import Checkpoint
from tests.leases.support import KCL_ITEM, ROUND_TRIP_CASES, SEQ

RawItem = Callable[[str], dict[str, Any] | None]
KEY = "shardId-000000000000"
EXPIRY = 1_800_000_060_000


def _counter(item: dict[str, Any] | None) -> int:
    assert item is not None
    return int(item["leaseCounter"]["N"])


# -- the table ---------------------------------------------------------------------------------


def test_create_table_if_not_exists_creates_an_active_table_once(dynamodb: Any, table_name: str) -> None:
    store = LeaseStore(dynamodb, table_name)
    assert store.table_exists() is False

    assert store.create_table_if_not_exists() is True

    table = dynamodb.describe_table(TableName=table_name)["Table"]
    assert table["TableStatus"] == "ACTIVE"
    assert table["KeySchema"] == [{"AttributeName": "leaseKey", "KeyType": "HASH"}]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert store.table_exists() is True


def test_create_table_if_not_exists_leaves_an_existing_table_and_its_leases(store: LeaseStore, dynamodb: Any) -> None:
    store.create_lease_if_not_exists(Lease(KEY, checkpoint=Checkpoint.at(SEQ)))

    assert store.create_table_if_not_exists() is False

    assert dynamodb.list_tables()["TableNames"] == [store.table_name]
    assert store.get_lease(KEY) == Lease(KEY, checkpoint=Checkpoint.at(SEQ))


def test_delete_table_removes_it(store: LeaseStore, dynamodb: Any) -> None:
    store.delete_table()

    assert store.table_name not in dynamodb.list_tables()["TableNames"]
    assert store.table_exists() is False


def test_store_needs_a_table_name(dynamodb: Any) -> None:
    with pytest.raises(IllegalArgumentError, match="needs a name"):
        LeaseStore(dynamodb, "")


OPERATIONS: dict[str, Callable[[LeaseStore], object]] = {
    "list_leases": lambda s: s.list_leases(),
    "get_lease": lambda s: s.get_lease(KEY),
    "is_empty": lambda s: s.is_empty(),
    "create_lease_if_not_exists": lambda s: s.create_lease_if_not_exists(Lease(KEY)),
    "renew_lease": lambda s: s.renew_lease(Lease(KEY, lease_owner="w", lease_counter=1), EXPIRY),
    "take_lease": lambda s: s.take_lease(Lease(KEY), "w", EXPIRY),
    "release_lease": lambda s: s.release_lease(Lease(KEY, lease_owner="w", lease_counter=1)),
    "update_application_fields": lambda s: s.update_application_fields(Lease(KEY), {"lastRunId": "r"}),
    "delete_lease": lambda s: s.delete_lease(KEY),
    "delete_all": lambda s: s.delete_all(),
    "delete_table": lambda s: s.delete_table(),
}


@pytest.mark.parametrize("operation", OPERATIONS.values(), ids=OPERATIONS.keys())
def test_operation_on_missing_table_raises_lease_table_not_found(
    dynamodb: Any, operation: Callable[[LeaseStore], object]
) -> None:
    store = LeaseStore(dynamodb, "no-such-lease-table")

    with pytest.raises(LeaseTableNotFoundError, match="'no-such-lease-table' does not exist"):
        operation(store)


UNREACHABLE_OPERATIONS: dict[str, Callable[[LeaseStore], object]] = {
    "table_exists": lambda s: s.table_exists(),
    "create_table_if_not_exists": lambda s: s.create_table_if_not_exists(timeout=1),
    **{name: OPERATIONS[name] for name in ("list_leases", "get_lease", "create_lease_if_not_exists", "take_lease")},
}


@pytest.mark.parametrize("operation", UNREACHABLE_OPERATIONS.values(), ids=UNREACHABLE_OPERATIONS.keys())
def test_unreachable_endpoint_raises_dependency_error_naming_the_table(
    monkeypatch: pytest.MonkeyPatch, operation: Callable[[LeaseStore], object]
) -> None:
    closed = f"http://{LOOPBACK}:{free_port()}"  # bound and released: nothing listens there
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", closed)
    monkeypatch.setattr(Backoff, "delay", lambda self, attempt, rand=None: 0.0)  # every try, none of the waits
    store = LeaseStore(aws.dynamodb_client(), "leases")

    with pytest.raises(DependencyError) as raised:
        operation(store)

    message = str(raised.value)
    assert "leases: cannot reach the endpoint" in message
    assert closed in message


# -- reading -----------------------------------------------------------------------------------


@pytest.mark.parametrize("lease", ROUND_TRIP_CASES.values(), ids=ROUND_TRIP_CASES.keys())
def test_created_lease_reads_back_equal(store: LeaseStore, lease: Lease) -> None:
    assert store.create_lease_if_not_exists(lease) is True

    assert store.get_lease(lease.lease_key) == lease
    assert store.list_leases() == [lease]


def test_get_lease_returns_none_when_absent(store: LeaseStore, make_leases: Callable[..., list[str]]) -> None:
    make_leases(1)

    assert store.get_lease("shardId-999999999999") is None


def test_list_leases_reads_every_page_of_the_scan(
    store: LeaseStore, dynamodb: Any, put_raw: Callable[[dict[str, Any]], None]
) -> None:
    # moto ends a Scan page at 1 MB, like DynamoDB: 60 items of ~40 KB take three pages.
    leases = [Lease(f"shardId-{i:012d}", checkpoint=Checkpoint.at(str(i))) for i in range(60)]
    for lease in leases:
        put_raw({**lease.to_item(), "padding": {"S": "x" * 40_000}})
    first_page = dynamodb.scan(TableName=store.table_name)
    assert "LastEvaluatedKey" in first_page and len(first_page["Items"]) < 60  # really paginated

    listed = store.list_leases()

    assert sorted(listed, key=lambda lease: lease.lease_key) == leases


def test_list_leases_returns_every_lease_of_a_table_of_fifty(
    store: LeaseStore, make_leases: Callable[..., list[str]]
) -> None:
    keys = make_leases(50)

    assert sorted(lease.lease_key for lease in store.list_leases()) == keys


def test_list_leases_on_empty_table_is_empty(store: LeaseStore) -> None:
    assert store.list_leases() == []


def test_list_leases_raises_malformed_lease_error_naming_the_bad_item(
    store: LeaseStore, make_leases: Callable[..., list[str]], put_raw: Callable[[dict[str, Any]], None]
) -> None:
    make_leases(3)
    put_raw({**Lease("shardId-bad").to_item(), "checkpoint": {"N": "12"}})

    with pytest.raises(MalformedLeaseError, match=r"'shardId-bad'.*checkpoint"):
        store.list_leases()


def test_kcl_written_item_is_read_from_the_table(store: LeaseStore, put_raw: Callable[[dict[str, Any]], None]) -> None:
    put_raw(KCL_ITEM)

    lease = store.get_lease("shardId-000000000004")

    assert lease is not None
    assert (lease.lease_owner, lease.lease_counter, lease.expires_at_ms) == ("kcl-worker-1", 42, None)
    assert lease.checkpoint == Checkpoint.at(SEQ, 5)
    assert lease.parent_shard_ids == {"shardId-000000000001", "shardId-000000000002"}


def test_is_empty_is_true_only_without_items(store: LeaseStore) -> None:
    assert store.is_empty() is True

    store.create_lease_if_not_exists(Lease(KEY))

    assert store.is_empty() is False


# -- creating ----------------------------------------------------------------------------------


def test_second_create_returns_false_and_leaves_the_first_lease_intact(store: LeaseStore, raw_item: RawItem) -> None:
    first = Lease(KEY, checkpoint=Checkpoint.at(SEQ, 2), parent_shard_ids=frozenset({"shardId-p"}))
    assert store.create_lease_if_not_exists(first) is True
    before = raw_item(KEY)

    assert store.create_lease_if_not_exists(Lease(KEY, lease_owner="intruder", lease_counter=99)) is False

    assert raw_item(KEY) == before
    assert store.get_lease(KEY) == first


# -- renewing ----------------------------------------------------------------------------------


@pytest.fixture
def held(store: LeaseStore) -> Lease:
    """KEY, taken by worker-a (counter 1) with checkpoint SEQ."""
    store.create_lease_if_not_exists(Lease(KEY, checkpoint=Checkpoint.at(SEQ)))
    taken = store.take_lease(Lease(KEY, checkpoint=Checkpoint.at(SEQ)), "worker-a", EXPIRY)
    assert taken is not None
    return taken


def test_renew_increments_counter_and_moves_expiry(store: LeaseStore, held: Lease, raw_item: RawItem) -> None:
    renewed = store.renew_lease(held, EXPIRY + 5_000)

    assert renewed is not None
    assert (renewed.lease_owner, renewed.lease_counter, renewed.expires_at_ms) == ("worker-a", 2, EXPIRY + 5_000)
    item = raw_item(KEY)
    assert item is not None
    assert (item["leaseOwner"], item["leaseCounter"], item["leaseExpiresAt"]) == (
        {"S": "worker-a"},
        {"N": "2"},
        {"N": str(EXPIRY + 5_000)},
    )
    assert Lease.from_item(item) == renewed


def test_renew_with_stale_counter_returns_none_and_changes_nothing(
    store: LeaseStore, held: Lease, raw_item: RawItem
) -> None:
    assert store.renew_lease(held, EXPIRY + 1) is not None
    before = raw_item(KEY)

    assert store.renew_lease(held, EXPIRY + 2) is None  # held still has counter 1

    assert raw_item(KEY) == before


def test_renew_of_lease_owned_by_another_worker_returns_none(store: LeaseStore, held: Lease, raw_item: RawItem) -> None:
    before = raw_item(KEY)

    assert store.renew_lease(replace(held, lease_owner="worker-b"), EXPIRY + 1) is None

    assert raw_item(KEY) == before


def test_renew_of_deleted_lease_returns_none_and_does_not_recreate_it(
    store: LeaseStore, held: Lease, raw_item: RawItem
) -> None:
    store.delete_lease(KEY)

    assert store.renew_lease(held, EXPIRY + 1) is None

    assert raw_item(KEY) is None


# -- taking ------------------------------------------------------------------------------------


def test_take_of_free_lease_sets_owner_counter_expiry_and_counts_a_switch(store: LeaseStore, raw_item: RawItem) -> None:
    store.create_lease_if_not_exists(Lease(KEY, checkpoint=Checkpoint.at(SEQ)))
    free = store.get_lease(KEY)
    assert free is not None

    taken = store.take_lease(free, "worker-a", EXPIRY)

    assert taken == Lease(
        KEY,
        lease_owner="worker-a",
        lease_counter=1,
        checkpoint=Checkpoint.at(SEQ),
        owner_switches_since_checkpoint=1,
        expires_at_ms=EXPIRY,
    )
    assert store.get_lease(KEY) == taken
    item = raw_item(KEY)
    assert item is not None
    assert (item["leaseOwner"], item["leaseCounter"], item["leaseExpiresAt"]) == (
        {"S": "worker-a"},
        {"N": "1"},
        {"N": str(EXPIRY)},
    )


def test_take_of_expired_lease_of_another_worker_switches_owner(
    store: LeaseStore, held: Lease, raw_item: RawItem
) -> None:
    # Whether it has expired is the manager's call; the store takes the lease as last seen.
    taken = store.take_lease(held, "worker-b", EXPIRY + 60_000)

    assert taken is not None
    assert (taken.lease_owner, taken.lease_counter, taken.owner_switches_since_checkpoint) == ("worker-b", 2, 2)
    assert store.get_lease(KEY) == taken
    assert taken.checkpoint == Checkpoint.at(SEQ)


def test_take_by_same_owner_does_not_count_an_owner_switch(store: LeaseStore, held: Lease) -> None:
    again = store.take_lease(held, "worker-a", EXPIRY + 1)
    assert again is not None
    assert (again.lease_counter, again.owner_switches_since_checkpoint) == (2, 1)

    other = store.take_lease(again, "worker-b", EXPIRY + 2)

    assert other is not None
    assert (other.lease_counter, other.owner_switches_since_checkpoint) == (3, 2)
    stored = store.get_lease(KEY)
    assert stored is not None and stored.owner_switches_since_checkpoint == 2


def test_take_that_lost_the_race_returns_none_and_leaves_the_winner(store: LeaseStore, raw_item: RawItem) -> None:
    store.create_lease_if_not_exists(Lease(KEY))
    seen = store.get_lease(KEY)  # both workers read the same copy
    assert seen is not None
    winner = store.take_lease(seen, "worker-a", EXPIRY)
    assert winner is not None

    assert store.take_lease(seen, "worker-b", EXPIRY) is None

    assert store.get_lease(KEY) == winner
    assert _counter(raw_item(KEY)) == 1


def test_take_of_deleted_lease_returns_none_and_does_not_recreate_it(store: LeaseStore, raw_item: RawItem) -> None:
    assert store.take_lease(Lease(KEY), "worker-a", EXPIRY) is None

    assert raw_item(KEY) is None


# -- releasing, evicting, deleting ---------------------------------------------------------------


def test_release_removes_owner_and_expiry_and_keeps_checkpoint(
    store: LeaseStore, held: Lease, raw_item: RawItem
) -> None:
    released = store.release_lease(held)

    assert released is not None
    assert (released.lease_owner, released.expires_at_ms, released.lease_counter) == (None, None, 2)
    item = raw_item(KEY)
    assert item is not None
    assert "leaseOwner" not in item and "leaseExpiresAt" not in item
    assert item["checkpoint"] == {"S": SEQ}
    assert item["ownerSwitchesSinceCheckpoint"] == {"N": "1"}


def test_release_returns_none_when_another_worker_took_the_lease(
    store: LeaseStore, held: Lease, raw_item: RawItem
) -> None:
    assert store.take_lease(held, "worker-b", EXPIRY) is not None
    before = raw_item(KEY)

    assert store.release_lease(held) is None

    assert raw_item(KEY) == before
    assert before is not None and before["leaseOwner"] == {"S": "worker-b"}


def test_evict_removes_the_owner_whatever_the_counter(store: LeaseStore, held: Lease, raw_item: RawItem) -> None:
    assert store.renew_lease(held, EXPIRY + 1) is not None  # held's counter is stale now

    evicted = store.evict_lease(held)

    assert evicted is not None and evicted.lease_owner is None
    item = raw_item(KEY)
    assert item is not None
    assert "leaseOwner" not in item and "leaseExpiresAt" not in item
    assert (_counter(item), item["checkpoint"]) == (3, {"S": SEQ})


def test_evict_returns_none_when_the_owner_changed(store: LeaseStore, held: Lease, raw_item: RawItem) -> None:
    assert store.take_lease(held, "worker-b", EXPIRY) is not None
    before = raw_item(KEY)

    assert store.evict_lease(held) is None

    assert raw_item(KEY) == before


def test_evict_of_free_lease_changes_nothing(store: LeaseStore, raw_item: RawItem) -> None:
    store.create_lease_if_not_exists(Lease(KEY))
    before = raw_item(KEY)

    assert store.evict_lease(Lease(KEY)) == Lease(KEY)

    assert raw_item(KEY) == before


def test_delete_lease_removes_only_that_item(store: LeaseStore, make_leases: Callable[..., list[str]]) -> None:
    keys = make_leases(3)

    store.delete_lease(keys[1])
    store.delete_lease("shardId-never-existed")  # no error

    assert sorted(lease.lease_key for lease in store.list_leases()) == [keys[0], keys[2]]


def test_delete_all_deletes_every_page_and_counts(
    store: LeaseStore, dynamodb: Any, put_raw: Callable[[dict[str, Any]], None]
) -> None:
    for i in range(60):
        put_raw({**Lease(f"shardId-{i:012d}").to_item(), "padding": {"S": "x" * 40_000}})

    assert store.delete_all() == 60

    assert dynamodb.scan(TableName=store.table_name)["Count"] == 0
    assert store.is_empty() is True
    assert store.delete_all() == 0


# -- application fields ------------------------------------------------------------------------


def test_update_application_fields_writes_them_and_bumps_the_counter(
    store: LeaseStore, held: Lease, raw_item: RawItem
) -> None:
    updated = store.update_application_fields(held, {"lineageDepth": 2, "lastRunId": "run-7", "lastBatchId": "b-3"})

    assert updated is not None
    assert (updated.lineage_depth, updated.last_run_id, updated.last_batch_id) == (2, "run-7", "b-3")
    item = raw_item(KEY)
    assert item is not None
    assert (item["lineageDepth"], item["lastRunId"], item["lastBatchId"]) == ({"N": "2"}, {"S": "run-7"}, {"S": "b-3"})
    assert (_counter(item), item["leaseOwner"], item["checkpoint"]) == (2, {"S": "worker-a"}, {"S": SEQ})
    assert Lease.from_item(item) == updated


@pytest.mark.parametrize(
    "fields",
    [
        {"leaseOwner": "worker-z"},
        {"checkpoint": "TRIM_HORIZON"},
        {"leaseCounter": 0},
        {"lastRunId": "ok", "leaseExpiresAt": 0},
    ],
    ids=["leaseOwner", "checkpoint", "leaseCounter", "one allowed, one not"],
)
def test_update_application_fields_refuses_other_attributes(
    store: LeaseStore, held: Lease, raw_item: RawItem, fields: dict[str, str | int]
) -> None:
    before = raw_item(KEY)

    with pytest.raises(IllegalArgumentError, match="not application fields"):
        store.update_application_fields(held, fields)

    assert raw_item(KEY) == before


@pytest.mark.parametrize(
    "fields",
    [{"lastRunId": 5}, {"lastBatchId": 1}, {"lineageDepth": "2"}, {"lineageDepth": True}],
    ids=["lastRunId as int", "lastBatchId as int", "lineageDepth as str", "lineageDepth as bool"],
)
def test_update_application_fields_refuses_values_that_would_make_the_lease_unreadable(
    store: LeaseStore, held: Lease, raw_item: RawItem, fields: dict[str, str | int]
) -> None:
    before = raw_item(KEY)

    with pytest.raises(IllegalArgumentError, match="must be"):
        store.update_application_fields(held, fields)

    assert raw_item(KEY) == before
    assert store.list_leases() == [held]


def test_update_application_fields_is_fenced(store: LeaseStore, held: Lease, raw_item: RawItem) -> None:
    assert store.renew_lease(held, EXPIRY + 1) is not None
    before = raw_item(KEY)

    assert store.update_application_fields(held, {"lastRunId": "late-run"}) is None

    assert raw_item(KEY) == before
    assert before is not None and "lastRunId" not in before


def test_update_application_fields_with_nothing_to_set_writes_nothing(
    store: LeaseStore, held: Lease, raw_item: RawItem
) -> None:
    before = raw_item(KEY)

    assert store.update_application_fields(held, {}) == held

    assert raw_item(KEY) == before
