"""The lease item format: our writes read back unchanged, KCL items parse, bad items are named."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.errors import MalformedLeaseError
from kinesis_batch.leases.model import Lease
from kinesis_batch.shards.checkpoint import Checkpoint
from tests.leases.support import KCL_ITEM, ROUND_TRIP_CASES, SEQ


@pytest.mark.parametrize("lease", ROUND_TRIP_CASES.values(), ids=ROUND_TRIP_CASES.keys())
def test_from_item_of_to_item_gives_back_the_same_lease(lease: Lease) -> None:
    assert Lease.from_item(lease.to_item()) == lease


def test_to_item_writes_kcl_attribute_names_and_types() -> None:
    lease = ROUND_TRIP_CASES["pending checkpoint of a batch"]
    parents = ROUND_TRIP_CASES["two parents and application fields"]

    assert lease.to_item() == {
        "leaseKey": {"S": "shardId-000000000007"},
        "leaseOwner": {"S": "worker-b"},
        "leaseCounter": {"N": "3"},
        "checkpoint": {"S": "100"},
        "checkpointSubSequenceNumber": {"N": "0"},
        "pendingCheckpoint": {"S": "200"},
        "pendingCheckpointSubSequenceNumber": {"N": "4"},
        "pendingBatchId": {"S": "batch-0001"},
        "ownerSwitchesSinceCheckpoint": {"N": "0"},
        "leaseExpiresAt": {"N": "1800000000000"},
    }
    assert parents.to_item()["parentShardId"] == {"SS": ["shardId-000000000000", "shardId-000000000001"]}
    assert parents.to_item()["lineageDepth"] == {"N": "1"}


def test_to_item_leaves_out_absent_optional_attributes() -> None:
    # DynamoDB rejects an empty string set, and an absent leaseOwner is what "free" means.
    item = Lease("shardId-000000000000").to_item()

    assert set(item) == {
        "leaseKey",
        "leaseCounter",
        "checkpoint",
        "checkpointSubSequenceNumber",
        "ownerSwitchesSinceCheckpoint",
    }
    assert item["checkpoint"] == {"S": "TRIM_HORIZON"}


def test_at_timestamp_checkpoint_keeps_its_time_in_checkpoint_timestamp() -> None:
    lease = ROUND_TRIP_CASES["at timestamp, other offset"]

    item = lease.to_item()

    assert item["checkpoint"] == {"S": "AT_TIMESTAMP"}
    assert item["checkpointTimestamp"] == {"S": "2026-07-01T12:00:00+05:30"}


def test_kcl_written_item_without_expiry_parses_with_its_checkpoint_and_parents() -> None:
    lease = Lease.from_item(KCL_ITEM)

    assert lease == Lease(
        lease_key="shardId-000000000004",
        lease_owner="kcl-worker-1",
        lease_counter=42,
        checkpoint=Checkpoint.at(SEQ, 5),
        owner_switches_since_checkpoint=1,
        parent_shard_ids=frozenset({"shardId-000000000001", "shardId-000000000002"}),
    )
    assert lease.expires_at_ms is None


def test_kcl_item_with_only_key_counter_and_checkpoint_gets_defaults() -> None:
    lease = Lease.from_item(
        {"leaseKey": {"S": "shardId-1"}, "leaseCounter": {"N": "0"}, "checkpoint": {"S": "TRIM_HORIZON"}}
    )

    assert lease == Lease("shardId-1")


def test_null_attributes_read_as_absent() -> None:
    item = {**Lease("shardId-1").to_item(), "leaseOwner": {"NULL": True}, "leaseExpiresAt": {"NULL": True}}

    assert Lease.from_item(item) == Lease("shardId-1")


def _with(**changes: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The KCL item with attributes replaced (a value) or removed (None)."""
    item = dict(KCL_ITEM)
    for name, value in changes.items():
        if value is None:
            item.pop(name, None)
        else:
            item[name] = value
    return item


MALFORMED: dict[str, tuple[dict[str, dict[str, Any]], str]] = {
    "checkpoint as a number": (_with(checkpoint={"N": "12"}), "checkpoint"),
    "checkpoint missing": (_with(checkpoint=None), "checkpoint"),
    "checkpoint not a sequence number": (_with(checkpoint={"S": "12ab"}), "12ab"),
    "leaseCounter as a string": (_with(leaseCounter={"S": "42"}), "leaseCounter"),
    "leaseCounter missing": (_with(leaseCounter=None), "leaseCounter"),
    "leaseCounter not an integer": (_with(leaseCounter={"N": "1.5"}), "1.5"),
    "leaseOwner as a number": (_with(leaseOwner={"N": "1"}), "leaseOwner"),
    "negative sub-sequence number": (_with(checkpointSubSequenceNumber={"N": "-1"}), "sub-sequence"),
    "pending checkpoint not a sequence number": (_with(pendingCheckpoint={"S": "soon"}), "soon"),
    "parentShardId as a plain string": (_with(parentShardId={"S": "shardId-000000000001"}), "parentShardId"),
    "leaseExpiresAt as a string": (_with(leaseExpiresAt={"S": "tomorrow"}), "leaseExpiresAt"),
    "AT_TIMESTAMP without its timestamp": (_with(checkpoint={"S": "AT_TIMESTAMP"}), "timestamp"),
    "timestamp without a time zone": (
        _with(checkpoint={"S": "AT_TIMESTAMP"}, checkpointTimestamp={"S": "2026-01-01T00:00:00"}),
        "time zone",
    ),
    "timestamp that is no time": (
        _with(checkpoint={"S": "AT_TIMESTAMP"}, checkpointTimestamp={"S": "yesterday"}),
        "yesterday",
    ),
}


@pytest.mark.parametrize(("item", "detail"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_item_raises_malformed_lease_error_naming_key_and_problem(
    item: dict[str, dict[str, Any]], detail: str
) -> None:
    with pytest.raises(MalformedLeaseError) as raised:
        Lease.from_item(item)

    assert "'shardId-000000000004'" in str(raised.value)
    assert detail in str(raised.value)


@pytest.mark.parametrize(
    "item",
    [
        _with(leaseKey=None),
        _with(leaseKey={"N": "4"}),
        _with(leaseKey={"S": ""}),
    ],
    ids=["no leaseKey", "leaseKey as a number", "empty leaseKey"],
)
def test_item_without_a_usable_lease_key_raises_malformed_lease_error(item: dict[str, dict[str, Any]]) -> None:
    with pytest.raises(MalformedLeaseError, match="without a string leaseKey"):
        Lease.from_item(item)


@pytest.mark.parametrize(
    ("lease_key", "shard_id"),
    [
        ("shardId-000000000001", "shardId-000000000001"),
        ("orders:shardId-000000000001", "shardId-000000000001"),
        # KCL multi-stream tables: account:stream:creation epoch:shard
        ("123456789012:orders:1690000000:shardId-000000000007", "shardId-000000000007"),
    ],
)
def test_shard_id_is_the_part_of_the_lease_key_after_the_last_colon(lease_key: str, shard_id: str) -> None:
    assert Lease(lease_key).shard_id == shard_id


@pytest.mark.parametrize(
    ("lease", "now_ms", "live"),
    [
        (Lease("s"), 0, False),
        (Lease("s", expires_at_ms=1_000), 0, False),  # an expiry without an owner is no holder
        (Lease("s", lease_owner="w", expires_at_ms=1_000), 999, True),
        (Lease("s", lease_owner="w", expires_at_ms=1_000), 1_000, False),
        (Lease("s", lease_owner="w", expires_at_ms=1_000), 5_000, False),
        (Lease("s", lease_owner="kcl-worker"), 10**15, True),  # no expiry: a KCL worker, live
    ],
    ids=["free", "free with stale expiry", "before expiry", "at expiry", "after expiry", "owner without expiry"],
)
def test_is_live(lease: Lease, now_ms: int, live: bool) -> None:
    assert lease.is_live(now_ms) is live
