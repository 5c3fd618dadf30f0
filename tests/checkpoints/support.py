"""Helpers for the checkpoint tests: a fake clock, taking leases as a run does, raw reads.

Assertions read items back with the plain DynamoDB client, not through the code under test.
"""

from __future__ import annotations

from typing import Any

from kinesis_batch.checkpoints.history import history_table_name
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.model import Lease

TABLE = "orders-app"
HISTORY = history_table_name(TABLE)
LEASE_SECONDS = 30.0

Item = dict[str, dict[str, Any]]


class FakeClock:
    """Seconds since the epoch that move only when told to (for LeaseManager)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def take(manager: LeaseManager, lease_key: str) -> Lease:
    """Take one lease as a run does; fails the test if it was not acquired."""
    result = manager.take([lease_key])
    assert [lease.lease_key for lease in result.acquired] == [lease_key], result
    return result.acquired[0]


def take_over(dead: LeaseManager, successor: LeaseManager, clock: FakeClock, lease_key: str) -> Lease:
    """Let ``dead``'s lease expire and have ``successor`` take it."""
    assert lease_key in successor.take([lease_key]).held_elsewhere, "the first holder's lease should still be live"
    clock.advance(dead.lease_duration + 1)
    return take(successor, lease_key)


def lease_item(dynamodb: Any, lease_key: str) -> Item | None:
    response = dynamodb.get_item(TableName=TABLE, Key={"leaseKey": {"S": lease_key}}, ConsistentRead=True)
    item: Item | None = response.get("Item")
    return item


def history_items(dynamodb: Any, lease_key: str | None = None) -> list[Item]:
    """History items (of one shard, or all), in range-key order."""
    if lease_key is None:
        items: list[Item] = dynamodb.scan(TableName=HISTORY, ConsistentRead=True)["Items"]
        return sorted(items, key=lambda i: (i["leaseKey"]["S"], i["commitId"]["S"]))
    response = dynamodb.query(
        TableName=HISTORY,
        KeyConditionExpression="leaseKey = :k",
        ExpressionAttributeValues={":k": {"S": lease_key}},
        ConsistentRead=True,
    )
    return list(response["Items"])


def table_names(dynamodb: Any) -> set[str]:
    return set(dynamodb.list_tables()["TableNames"])
