"""Shared lease test data: leases that must survive a trip through an item, a KCL item, raw writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from kinesis_batch.leases.model import Lease
from kinesis_batch.shards.checkpoint import Checkpoint

IST = timezone(timedelta(hours=5, minutes=30))
SEQ = "49590338271490256608559692538361571095921575989136588898"

ROUND_TRIP_CASES: dict[str, Lease] = {
    "new lease at trim horizon": Lease("shardId-000000000000"),
    "latest sentinel": Lease("shardId-000000000001", checkpoint=Checkpoint.latest()),
    "shard end sentinel, released": Lease("shardId-000000000002", lease_counter=9, checkpoint=Checkpoint.shard_end()),
    "held, sequence number with sub-sequence": Lease(
        "shardId-000000000003",
        lease_owner="worker-a",
        lease_counter=7,
        checkpoint=Checkpoint.at(SEQ, 3),
        owner_switches_since_checkpoint=2,
        expires_at_ms=1_800_000_060_000,
    ),
    "largest 128-bit sequence number": Lease("shardId-000000000004", checkpoint=Checkpoint.at(str(2**128 - 1))),
    "at timestamp, UTC": Lease(
        "shardId-000000000005", checkpoint=Checkpoint.at_timestamp(datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC))
    ),
    "at timestamp, other offset": Lease(
        "shardId-000000000006",
        checkpoint=Checkpoint.at_timestamp(datetime(2026, 7, 1, 12, 0, tzinfo=IST)),
    ),
    "pending checkpoint of a batch": Lease(
        "shardId-000000000007",
        lease_owner="worker-b",
        lease_counter=3,
        checkpoint=Checkpoint.at("100", 0),
        pending_checkpoint=Checkpoint.at("200", 4),
        pending_batch_id="batch-0001",
        expires_at_ms=1_800_000_000_000,
    ),
    "pending shard end": Lease(
        "shardId-000000000008",
        checkpoint=Checkpoint.at("100"),
        pending_checkpoint=Checkpoint.shard_end(),
        pending_batch_id="batch-0002",
    ),
    "two parents and application fields": Lease(
        "shardId-000000000009",
        parent_shard_ids=frozenset({"shardId-000000000000", "shardId-000000000001"}),
        lineage_depth=1,
        last_batch_id="batch-0003",
        last_run_id="run-2026-01-01T00",
    ),
    "one parent, stream:shard key": Lease(
        "orders:shardId-000000000010", parent_shard_ids=frozenset({"shardId-000000000004"}), lineage_depth=0
    ),
}


#: As a KCL 2.x worker writes it: no expiry, its own extra attributes, parents as a string set.
KCL_ITEM: dict[str, dict[str, Any]] = {
    "leaseKey": {"S": "shardId-000000000004"},
    "leaseOwner": {"S": "kcl-worker-1"},
    "leaseCounter": {"N": "42"},
    "checkpoint": {"S": SEQ},
    "checkpointSubSequenceNumber": {"N": "5"},
    "ownerSwitchesSinceCheckpoint": {"N": "1"},
    "parentShardId": {"SS": ["shardId-000000000001", "shardId-000000000002"]},
    "childShardIds": {"SS": ["shardId-000000000007"]},
    "startingHashKey": {"S": "0"},
    "endingHashKey": {"S": "170141183460469231731687303715884105727"},
}


def corrupt(dynamodb: Any, table_name: str, key: str) -> None:
    """Another program writes a checkpoint of the wrong type (owner and counter untouched)."""
    dynamodb.update_item(
        TableName=table_name,
        Key={"leaseKey": {"S": key}},
        UpdateExpression="SET checkpoint = :bad",
        ExpressionAttributeValues={":bad": {"N": "7"}},
    )


def repair(dynamodb: Any, table_name: str, key: str) -> None:
    dynamodb.update_item(
        TableName=table_name,
        Key={"leaseKey": {"S": key}},
        UpdateExpression="SET checkpoint = :ok",
        ExpressionAttributeValues={":ok": {"S": "TRIM_HORIZON"}},
    )
