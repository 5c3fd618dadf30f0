"""The lease and history tables' own calls (CreateTable, DescribeTable) at the top of the hour:
through the limits proxy in front of moto_server, a throttle and a dropped connection are ridden
out with backoff; the budget is bounded; a lost condition and a missing table stay what they are."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.config import Config
from devkit.limits_proxy import ControlLimits, LimitsProxy
from devkit.stack import LocalStack

from kinesis_batch._backoff import Backoff
from kinesis_batch.errors import DependencyError, ThrottledError
from kinesis_batch.leases.dynamodb import KeySpec, create_table, table_status
from tests.faults import FakeClock

BACKOFF = Backoff(base=0.5, cap=2.0, attempts=6)
KEYS: list[KeySpec] = [("leaseKey", "S", "HASH")]


def client_of(proxy: LimitsProxy) -> Any:
    """A client without botocore's own quick retries, so every retry counted is the library's."""
    return boto3.client("dynamodb", endpoint_url=proxy.url, config=Config(retries={"total_max_attempts": 1}))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def proxy(stack: LocalStack, clock: FakeClock) -> Iterator[LimitsProxy]:
    # One call per table a second: every second call of a run's start is throttled.
    with LimitsProxy(stack.dynamodb.url, control=ControlLimits.dynamodb(1), clock=clock) as running:
        yield running


def test_a_throttled_create_and_describe_are_retried_until_they_get_through(
    proxy: LimitsProxy, clock: FakeClock
) -> None:
    # Each wait its jitter's longest: drawn, five waits summed under the fake second that the
    # proxy counts in about one time in a few hundred, and every try was throttled (a CI failure).
    longest = replace(BACKOFF, jitter=lambda: 1.0)
    client = client_of(proxy)
    table = f"t-{uuid.uuid4().hex[:8]}"

    assert create_table(client, table, KEYS, backoff=longest, sleep=clock.sleep)
    assert table_status(client, table, backoff=longest, sleep=clock.sleep) == "ACTIVE"
    assert table_status(client, table, backoff=longest, sleep=clock.sleep) == "ACTIVE"

    assert proxy.throttles.get("DescribeTable", 0) >= 1
    assert clock.sleeps and all(0 <= wait <= BACKOFF.cap for wait in clock.sleeps)
    # A table created by a try whose answer was lost is found in use by the next: not created twice.
    assert not create_table(client, table, KEYS, backoff=BACKOFF, sleep=clock.sleep)


def test_dropped_connections_are_ridden_out_and_a_missing_table_is_none(proxy: LimitsProxy, clock: FakeClock) -> None:
    client = client_of(proxy)
    table = f"t-{uuid.uuid4().hex[:8]}"
    proxy.drop("CreateTable", 2)
    proxy.drop("DescribeTable", 2)

    assert table_status(client, table, backoff=BACKOFF, sleep=clock.sleep) is None
    assert create_table(client, table, KEYS, backoff=BACKOFF, sleep=clock.sleep)
    assert proxy.dropped == {"CreateTable": 2, "DescribeTable": 2}


def test_the_budget_is_bounded_a_throttle_past_it_is_the_callers(stack: LocalStack, clock: FakeClock) -> None:
    # The clock never moves within a call's second here: each try is throttled again.
    with LimitsProxy(stack.dynamodb.url, control=ControlLimits.dynamodb(1), clock=lambda: 0.0) as proxy:
        client = client_of(proxy)
        table = f"t-{uuid.uuid4().hex[:8]}"
        assert table_status(client, table, backoff=BACKOFF, sleep=clock.sleep) is None
        with pytest.raises(ThrottledError, match="DescribeTable"):
            table_status(client, table, backoff=BACKOFF, sleep=clock.sleep)
        assert len(clock.sleeps) == BACKOFF.attempts - 1


def test_a_connection_dropped_every_time_is_a_dependency_error(proxy: LimitsProxy, clock: FakeClock) -> None:
    client = client_of(proxy)
    proxy.drop("DescribeTable", 100)
    with pytest.raises(DependencyError):
        table_status(client, f"t-{uuid.uuid4().hex[:8]}", backoff=BACKOFF, sleep=clock.sleep)
