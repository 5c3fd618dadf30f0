"""LeaseRenewer on a lease clock the test holds: the renewals are real (a thread, DynamoDB's
conditional writes, ticks of wall time), but whether a lease is live is judged on the test's
clock, so no assertion depends on how promptly a loaded machine schedules the renewer's thread.
A renewal round is seen by its counters going up; a lapse is the test advancing the clock."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from kinesis_batch.errors import MalformedLeaseError
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.renewer import LeaseRenewer
from kinesis_batch.leases.store import LeaseStore
from tests.leases.support import corrupt, repair

RawItem = Callable[[str], dict[str, Any] | None]
MakeLeases = Callable[..., list[str]]
DURATION = 1.5  # seconds of the lease clock; the renewer ticks every DURATION / 3 of wall time
ROUNDS_TIMEOUT = 60.0  # wall seconds a test waits for renewal rounds (a loaded machine's, not a budget)


class LeaseClock:
    """The lease clock of both workers: still unless the test moves it."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _item(raw_item: RawItem, key: str) -> dict[str, Any]:
    item = raw_item(key)
    assert item is not None
    return item


def _counter(raw_item: RawItem, key: str) -> int:
    return int(_item(raw_item, key)["leaseCounter"]["N"])


def _wait_for(condition: Callable[[], bool], timeout: float = ROUNDS_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def _rounds(raw_item: RawItem, keys: list[str], rounds: int) -> None:
    """Wait until ``rounds`` more renewals of every key went through."""
    start = {key: _counter(raw_item, key) for key in keys}
    _wait_for(lambda: all(_counter(raw_item, key) >= start[key] + rounds for key in keys))


@pytest.fixture
def clock() -> LeaseClock:
    return LeaseClock()


@pytest.fixture
def worker_a(store: LeaseStore, clock: LeaseClock) -> LeaseManager:
    return LeaseManager(store, "worker-a", DURATION, clock=clock)


@pytest.fixture
def worker_b(store: LeaseStore, clock: LeaseClock) -> LeaseManager:
    return LeaseManager(store, "worker-b", DURATION, clock=clock)


def test_renewer_keeps_leases_alive_over_several_durations_so_no_one_can_take_them(
    worker_a: LeaseManager, worker_b: LeaseManager, make_leases: MakeLeases, raw_item: RawItem, clock: LeaseClock
) -> None:
    keys = make_leases(4)
    worker_a.take(keys)

    with LeaseRenewer(worker_a) as renewer:
        for _ in range(6):  # three lease durations of the clock, a round in each half of one
            _rounds(raw_item, keys, 1)
            clock.advance(DURATION / 2)
            result = worker_b.take(keys)
            assert result.acquired == ()
            assert result.held_elsewhere == dict.fromkeys(keys, "worker-a")

    assert renewer.errors == []
    assert worker_a.lost == set()
    for key in keys:
        item = _item(raw_item, key)
        assert item["leaseOwner"] == {"S": "worker-a"}
        assert int(item["leaseExpiresAt"]["N"]) > clock() * 1000
        assert int(item["leaseCounter"]["N"]) >= 1 + 6  # the take, then a round at least each time
        assert worker_a.held()[key].lease_counter == int(item["leaseCounter"]["N"])


def test_leases_expire_after_the_renewer_stops_and_another_worker_takes_them(
    worker_a: LeaseManager, worker_b: LeaseManager, make_leases: MakeLeases, raw_item: RawItem, clock: LeaseClock
) -> None:
    keys = make_leases(3)
    worker_a.take(keys)
    with LeaseRenewer(worker_a) as renewer:
        _rounds(raw_item, keys, 2)
    counters = {key: _counter(raw_item, key) for key in keys}

    still_live = worker_b.take(keys)  # the last renewal's expiry is a lease ahead of the clock

    assert still_live.acquired == ()
    time.sleep(3 * renewer.interval)  # three ticks' worth of wall time: none comes
    assert {key: _counter(raw_item, key) for key in keys} == counters  # stopped means stopped
    clock.advance(DURATION + 0.001)  # the leases lapse

    taken = worker_b.take(keys)

    assert sorted(lease.lease_key for lease in taken.acquired) == keys
    assert all(_item(raw_item, key)["leaseOwner"] == {"S": "worker-b"} for key in keys)
    assert sorted(worker_a.renew()) == keys
    assert worker_a.held() == {}


def test_on_lost_is_called_when_another_worker_force_takes_a_lease(
    worker_a: LeaseManager, worker_b: LeaseManager, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    taken_away, kept = make_leases(2)
    worker_a.take([taken_away, kept])
    told: list[list[str]] = []
    called = threading.Event()

    def on_lost(lost: list[str]) -> None:
        told.append(lost)
        called.set()

    with LeaseRenewer(worker_a, on_lost=on_lost):
        _wait_for(lambda: all(_counter(raw_item, key) == 2 for key in (taken_away, kept)))  # the first round
        assert [lease.lease_key for lease in worker_b.take([taken_away], force=True).acquired] == [taken_away]
        assert called.wait(ROUNDS_TIMEOUT)
        _rounds(raw_item, [kept], 2)  # it goes on renewing the lease it kept, and tells only once

        assert worker_b.take([kept]).held_elsewhere == {kept: "worker-a"}

    assert told == [[taken_away]]
    assert worker_a.lost == {taken_away}
    assert set(worker_a.held()) == {kept}
    assert _item(raw_item, taken_away)["leaseOwner"] == {"S": "worker-b"}
    assert _item(raw_item, kept)["leaseOwner"] == {"S": "worker-a"}


def test_failing_on_lost_callback_does_not_stop_the_renewals(
    worker_a: LeaseManager,
    worker_b: LeaseManager,
    make_leases: MakeLeases,
    raw_item: RawItem,
    caplog: pytest.LogCaptureFixture,
) -> None:
    taken_away, kept = make_leases(2)
    worker_a.take([taken_away, kept])
    called = threading.Event()

    def on_lost(lost: list[str]) -> None:
        called.set()
        raise RuntimeError("callback bug")

    with caplog.at_level(logging.ERROR, logger="kinesis_batch.leases.renewer"), LeaseRenewer(worker_a, on_lost=on_lost):
        _wait_for(lambda: all(_counter(raw_item, key) == 2 for key in (taken_away, kept)))  # the first round
        worker_b.take([taken_away], force=True)
        assert called.wait(ROUNDS_TIMEOUT)
        _rounds(raw_item, [kept], 3)  # the callback's failure stopped nothing

        assert worker_b.take([kept]).held_elsewhere == {kept: "worker-a"}

    assert "on_lost callback failed" in caplog.text


def test_renewer_survives_a_failed_renewal_and_keeps_the_other_leases(
    worker_a: LeaseManager,
    worker_b: LeaseManager,
    dynamodb: Any,
    table_name: str,
    make_leases: MakeLeases,
    raw_item: RawItem,
) -> None:
    first, bad, last = make_leases(3)
    worker_a.take([first, bad, last])
    told: list[list[str]] = []

    with LeaseRenewer(worker_a, on_lost=told.append) as renewer:
        _wait_for(lambda: all(_counter(raw_item, key) == 2 for key in (first, bad, last)))  # the first round
        corrupt(dynamodb, table_name, bad)
        _wait_for(lambda: bool(renewer.errors))
        repair(dynamodb, table_name, bad)
        _wait_for(lambda: bad in worker_a.lost_leases())
        _rounds(raw_item, [first, last], 2)

        # The leases whose renewals went through in the failed round are still renewed.
        assert worker_b.take([first, last]).held_elsewhere == {first: "worker-a", last: "worker-a"}

    assert all(isinstance(error, MalformedLeaseError) for error in renewer.errors)
    assert worker_a.lost == {bad}
    assert set(worker_a.held()) == {first, last}
    assert told == [[bad]]
    for key in (first, last):
        assert worker_a.held()[key].lease_counter == _counter(raw_item, key)


def test_renewer_interval_defaults_to_a_third_of_the_lease_duration(worker_a: LeaseManager) -> None:
    assert LeaseRenewer(worker_a).interval == pytest.approx(DURATION / 3)
    assert LeaseRenewer(worker_a, interval=0.05).interval == 0.05


def test_on_lost_is_told_of_leases_lost_in_a_round_where_another_renewal_failed(
    store: LeaseStore,
    worker_b: LeaseManager,
    dynamodb: Any,
    table_name: str,
    make_leases: MakeLeases,
    raw_item: RawItem,
) -> None:
    taken_away, bad, kept = make_leases(3)
    worker = LeaseManager(store, "worker-a", lease_duration=3.0)
    worker.take([taken_away, bad, kept])
    told: list[list[str]] = []
    called = threading.Event()

    def on_lost(lost: list[str]) -> None:
        told.append(lost)
        called.set()

    # Both happen before the renewer's first round (at once), which sees both; no second comes.
    worker_b.take([taken_away], force=True)
    corrupt(dynamodb, table_name, bad)
    with LeaseRenewer(worker, interval=60, on_lost=on_lost) as renewer:
        assert called.wait(ROUNDS_TIMEOUT)

        assert told[0] == [taken_away]
        assert len(renewer.errors) == 1 and isinstance(renewer.errors[0], MalformedLeaseError)
        assert taken_away in worker.lost_leases()
        assert kept in worker.held()


def test_the_first_renewal_is_at_once_for_leases_another_task_took_a_while_ago(
    worker_a: LeaseManager, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    keys = make_leases(2)
    worker_a.take(keys)  # the orchestrator's acquiring task; the reading task starts later
    with LeaseRenewer(worker_a, interval=60):  # no tick would come within the test
        _wait_for(lambda: all(_counter(raw_item, key) == 2 for key in keys))
