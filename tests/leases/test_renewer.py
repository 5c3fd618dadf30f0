"""LeaseRenewer with a short real lease duration: leases stay ours while it runs, lapse after."""

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
# Seconds of real time; the renewer ticks every 0.5 s. At 0.6 s a CI machine busy with Spark in the
# other test worker once stalled a renewal past the lease.
DURATION = 1.5


def _item(raw_item: RawItem, key: str) -> dict[str, Any]:
    item = raw_item(key)
    assert item is not None
    return item


def _counter(raw_item: RawItem, key: str) -> int:
    return int(_item(raw_item, key)["leaseCounter"]["N"])


def _wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


@pytest.fixture
def worker_a(store: LeaseStore) -> LeaseManager:
    return LeaseManager(store, "worker-a", DURATION)


@pytest.fixture
def worker_b(store: LeaseStore) -> LeaseManager:
    return LeaseManager(store, "worker-b", DURATION)


def test_renewer_keeps_leases_alive_over_several_durations_so_no_one_can_take_them(
    worker_a: LeaseManager, worker_b: LeaseManager, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    keys = make_leases(4)
    worker_a.take(keys)

    with LeaseRenewer(worker_a) as renewer:
        end = time.monotonic() + 3 * DURATION
        attempts = 0
        while time.monotonic() < end:
            result = worker_b.take(keys)
            assert result.acquired == ()
            assert result.held_elsewhere == dict.fromkeys(keys, "worker-a")
            attempts += 1
            time.sleep(0.2)

    assert attempts >= 8
    assert renewer.errors == []
    assert worker_a.lost == set()
    now_ms = time.time() * 1000
    for key in keys:
        item = _item(raw_item, key)
        assert item["leaseOwner"] == {"S": "worker-a"}
        assert int(item["leaseExpiresAt"]["N"]) > now_ms
        # 4.5 s at one renewal per 0.5 s: about 9; the take counted 1.
        assert int(item["leaseCounter"]["N"]) >= 1 + 5
        assert worker_a.held()[key].lease_counter == int(item["leaseCounter"]["N"])


def test_leases_expire_after_the_renewer_stops_and_another_worker_takes_them(
    worker_a: LeaseManager, worker_b: LeaseManager, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    keys = make_leases(3)
    worker_a.take(keys)
    with LeaseRenewer(worker_a):
        time.sleep(2 * DURATION)
    counters = {key: _counter(raw_item, key) for key in keys}

    still_live = worker_b.take(keys)  # the last renewal is at most one tick old

    assert still_live.acquired == ()
    time.sleep(DURATION / 2)
    assert {key: _counter(raw_item, key) for key in keys} == counters  # stopped means stopped
    expiry_ms = max(int(_item(raw_item, key)["leaseExpiresAt"]["N"]) for key in keys)
    time.sleep(max(0.0, expiry_ms / 1000 - time.time()) + 0.05)

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
        assert called.wait(5 * DURATION)
        time.sleep(2 * DURATION)  # it goes on renewing the lease it kept, and tells only once

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
        assert called.wait(5 * DURATION)
        counter = _counter(raw_item, kept)
        time.sleep(2 * DURATION)

        assert _counter(raw_item, kept) >= counter + 3
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
        time.sleep(2 * DURATION)

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

    with LeaseRenewer(worker, interval=0.5, on_lost=on_lost) as renewer:
        # Both happen after the first round (at once) and well before the next, which sees both.
        _wait_for(lambda: all(_counter(raw_item, key) == 2 for key in (taken_away, bad, kept)))
        worker_b.take([taken_away], force=True)
        corrupt(dynamodb, table_name, bad)
        assert called.wait(2.0)

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
