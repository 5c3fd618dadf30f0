"""Checkpoint store fixtures: a real lease table and history table on the session's moto_server.

Leases are taken as a run takes them, with :class:`LeaseManager`; its clock is injected so a
test can let a lease expire and have another worker take it.
"""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.checkpoints.store import DynamoDBCheckpointStore
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.store import LeaseStore
from tests.checkpoints.support import LEASE_SECONDS, TABLE, FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def lease_store(dynamodb: Any) -> LeaseStore:
    return LeaseStore(dynamodb, TABLE)


@pytest.fixture
def store(lease_store: LeaseStore) -> DynamoDBCheckpointStore:
    """A checkpoint store whose tables exist, with leases for shard-0 and shard-1."""
    checkpoints = DynamoDBCheckpointStore(lease_store)
    checkpoints.create_checkpoint_store_if_not_exists()
    checkpoints.create_all_checkpoints_if_not_exists(["shard-0", "shard-1"])
    return checkpoints


@pytest.fixture
def worker_a(lease_store: LeaseStore, clock: FakeClock) -> LeaseManager:
    return LeaseManager(lease_store, "worker-a", LEASE_SECONDS, clock=clock)


@pytest.fixture
def worker_b(lease_store: LeaseStore, clock: FakeClock) -> LeaseManager:
    return LeaseManager(lease_store, "worker-b", LEASE_SECONDS, clock=clock)
