"""Fixtures of the lease tests: a fresh lease table on the session's moto_server, a settable clock."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from kinesis_batch import aws
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore

#: A fixed "now" for tests that drive time by hand (2027-01-15, as epoch seconds).
T0 = 1_800_000_000.0


class Clock:
    """A clock the test sets: ``LeaseManager(..., clock=Clock())``."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


_CLIENTS: dict[str, Any] = {}


@pytest.fixture
def dynamodb() -> Any:
    """tests/conftest.py's client, built once per endpoint (building one costs ~80 ms a test).

    boto3 clients are thread safe and hold no per-test state; moto is still reset after each test.
    """
    endpoint = os.environ["AWS_ENDPOINT_URL_DYNAMODB"]
    if endpoint not in _CLIENTS:
        _CLIENTS[endpoint] = aws.dynamodb_client()
    return _CLIENTS[endpoint]


@pytest.fixture
def table_name() -> str:
    return f"leases-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def store(dynamodb: Any, table_name: str) -> LeaseStore:
    lease_store = LeaseStore(dynamodb, table_name)
    lease_store.create_table_if_not_exists()
    return lease_store


@pytest.fixture
def raw_item(dynamodb: Any, table_name: str) -> Callable[[str], dict[str, Any] | None]:
    """The item as DynamoDB holds it now (strongly consistent), bypassing the code under test."""

    def read(lease_key: str) -> dict[str, Any] | None:
        item = dynamodb.get_item(TableName=table_name, Key={"leaseKey": {"S": lease_key}}, ConsistentRead=True)
        return item.get("Item")

    return read


@pytest.fixture
def put_raw(dynamodb: Any, table_name: str) -> Callable[[dict[str, Any]], None]:
    """Write an item as another program (the KCL, an operator) would: no checks."""

    def put(item: dict[str, Any]) -> None:
        dynamodb.put_item(TableName=table_name, Item=item)

    return put


@pytest.fixture
def make_leases(store: LeaseStore) -> Callable[..., list[str]]:
    """Create ``count`` free leases (shardId-000000000000, ...) and return their keys."""

    def make(count: int, *, prefix: str = "shardId-", keys: Iterable[str] | None = None) -> list[str]:
        names = list(keys) if keys is not None else [f"{prefix}{i:012d}" for i in range(count)]
        for name in names:
            assert store.create_lease_if_not_exists(Lease(name))
        return names

    return make
