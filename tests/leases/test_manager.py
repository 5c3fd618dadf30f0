"""Two LeaseManagers (two workers) on one real lease table: who gets what, and fencing."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from kinesis_batch.errors import IllegalArgumentError, LeaseLostError, MalformedLeaseError
from kinesis_batch.leases.manager import LeaseManager, TakeResult
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from tests.leases.conftest import T0, Clock
from tests.leases.support import KCL_ITEM, corrupt, repair

RawItem = Callable[[str], dict[str, Any] | None]
PutRaw = Callable[[dict[str, Any]], None]
MakeLeases = Callable[..., list[str]]
DURATION = 10.0  # seconds; time is moved with a Clock, never slept


def _owner(raw_item: RawItem, key: str) -> str | None:
    item = raw_item(key)
    assert item is not None
    owner = item.get("leaseOwner")
    return None if owner is None else str(owner["S"])


def _counter(raw_item: RawItem, key: str) -> int:
    item = raw_item(key)
    assert item is not None
    return int(item["leaseCounter"]["N"])


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def worker_a(store: LeaseStore, clock: Clock) -> LeaseManager:
    return LeaseManager(store, "worker-a", DURATION, clock=clock)


@pytest.fixture
def worker_b(store: LeaseStore) -> LeaseManager:
    # Its own clock, in step with worker-a's until a test moves it.
    return LeaseManager(store, "worker-b", DURATION, clock=Clock())


# -- taking ------------------------------------------------------------------------------------


def test_concurrent_takes_give_every_lease_to_exactly_one_worker(
    store: LeaseStore, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    keys = make_leases(20)
    workers = [LeaseManager(store, f"worker-{n}", DURATION) for n in "ab"]
    for round_number in range(1, 4):
        start = threading.Barrier(len(workers))
        results: dict[str, TakeResult] = {}

        def take(worker: LeaseManager, start: threading.Barrier = start, results: dict[str, TakeResult] = results):
            start.wait()
            results[worker.worker_id] = worker.take(keys)

        threads = [threading.Thread(target=take, args=(worker,)) for worker in workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

        acquired = {w: {lease.lease_key for lease in r.acquired} for w, r in results.items()}
        assert acquired["worker-a"].isdisjoint(acquired["worker-b"])
        assert acquired["worker-a"] | acquired["worker-b"] == set(keys)
        for worker_id, result in results.items():
            # Every key the worker did not get is accounted for as held elsewhere or a lost race.
            not_taken = set(result.held_elsewhere) | set(result.lost_race)
            assert not_taken == set(keys) - acquired[worker_id]
            assert not_taken.isdisjoint(acquired[worker_id])
        for worker in workers:
            assert set(worker.held()) == acquired[worker.worker_id]
        for key in keys:
            winner = "worker-a" if key in acquired["worker-a"] else "worker-b"
            assert _owner(raw_item, key) == winner
            # Each round: one take (and one release). A second successful take would show here.
            assert _counter(raw_item, key) == 2 * round_number - 1
        for worker in workers:
            worker.release()
        assert all(_owner(raw_item, key) is None for key in keys)


def test_take_skips_lease_held_live_elsewhere_and_reports_it(
    worker_a: LeaseManager, worker_b: LeaseManager, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    first, second = make_leases(2)
    assert [lease.lease_key for lease in worker_a.take([first]).acquired] == [first]

    result = worker_b.take([first, second])

    assert [lease.lease_key for lease in result.acquired] == [second]
    assert result.held_elsewhere == {first: "worker-a"}
    assert result.lost_race == () and result.missing == ()
    assert (_owner(raw_item, first), _counter(raw_item, first)) == ("worker-a", 1)
    assert _owner(raw_item, second) == "worker-b"
    assert set(worker_b.held()) == {second}


def test_take_reports_leases_without_an_item_as_missing(
    worker_a: LeaseManager, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    (key,) = make_leases(1)

    result = worker_a.take([key, "shardId-unknown", key])

    assert result.missing == ("shardId-unknown",)
    assert [lease.lease_key for lease in result.acquired] == [key]
    assert raw_item("shardId-unknown") is None


def test_take_of_own_lease_renews_it_without_counting_a_switch(
    worker_a: LeaseManager, clock: Clock, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    (key,) = make_leases(1)
    worker_a.take([key])
    clock.advance(5)

    (again,) = worker_a.take([key]).acquired

    assert (again.lease_counter, again.owner_switches_since_checkpoint) == (2, 1)
    assert again.expires_at_ms == int((T0 + 5 + DURATION) * 1000)
    item = raw_item(key)
    assert item is not None and item["leaseExpiresAt"] == {"N": str(again.expires_at_ms)}


def test_dead_holders_lease_is_taken_after_expiry_and_not_before(
    worker_a: LeaseManager, store: LeaseStore, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    (key,) = make_leases(1)
    worker_a.take([key])  # expires at T0 + DURATION; worker-a then "dies" (never renews)
    clock_b = Clock(T0 + DURATION - 0.001)
    worker_b = LeaseManager(store, "worker-b", DURATION, clock=clock_b)

    before = worker_b.take([key])

    assert before.acquired == () and before.held_elsewhere == {key: "worker-a"}
    assert (_owner(raw_item, key), _counter(raw_item, key)) == ("worker-a", 1)

    clock_b.advance(0.001)  # exactly at the expiry: no longer live
    after = worker_b.take([key])

    assert [lease.lease_key for lease in after.acquired] == [key]
    item = raw_item(key)
    assert item is not None
    assert (item["leaseOwner"], item["leaseCounter"], item["ownerSwitchesSinceCheckpoint"]) == (
        {"S": "worker-b"},
        {"N": "2"},
        {"N": "2"},
    )
    assert item["leaseExpiresAt"] == {"N": str(int((T0 + 2 * DURATION) * 1000))}


def test_dead_holder_learns_on_renew_that_it_lost_the_lease_and_its_fenced_writes_fail(
    worker_a: LeaseManager, store: LeaseStore, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    key, kept = make_leases(2)
    worker_a.take([key, kept])
    stale = worker_a.lease(key)
    worker_b = LeaseManager(store, "worker-b", DURATION, clock=Clock(T0 + DURATION + 1))
    assert len(worker_b.take([key]).acquired) == 1
    taken = raw_item(key)

    lost = worker_a.renew()  # worker-a wakes up after its lease expired

    assert lost == [key]
    assert worker_a.lost == {key}
    assert set(worker_a.held()) == {kept}
    with pytest.raises(LeaseLostError, match=f"lease {key} is not held by worker-a"):
        worker_a.lease(key)
    with pytest.raises(LeaseLostError), worker_a.fenced(key):
        pytest.fail("fenced() let a write through under a lost lease")
    # A write fenced on the copy worker-a still has cannot go through.
    assert store.update_application_fields(stale, {"lastRunId": "late-run"}) is None
    assert store.renew_lease(stale, 0) is None
    assert store.release_lease(stale) is None
    assert raw_item(key) == taken
    # The lease it still had was renewed.
    assert (_owner(raw_item, kept), _counter(raw_item, kept)) == ("worker-a", 2)


def test_force_takes_a_live_lease_from_another_worker(
    worker_a: LeaseManager, worker_b: LeaseManager, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    (key,) = make_leases(1)
    worker_a.take([key])

    result = worker_b.take([key], force=True)

    assert [lease.lease_key for lease in result.acquired] == [key]
    assert result.held_elsewhere == {}
    assert (_owner(raw_item, key), _counter(raw_item, key)) == ("worker-b", 2)
    assert worker_a.renew() == [key]


def test_kcl_lease_without_expiry_counts_live_and_is_taken_only_with_force(
    worker_a: LeaseManager, clock: Clock, put_raw: Callable[[dict[str, Any]], None], raw_item: RawItem
) -> None:
    key = KCL_ITEM["leaseKey"]["S"]
    put_raw(KCL_ITEM)
    clock.advance(10 * 365 * 24 * 3600)  # however late: without an expiry it never lapses

    result = worker_a.take([key])

    assert result.acquired == () and result.held_elsewhere == {key: "kcl-worker-1"}
    assert (_owner(raw_item, key), _counter(raw_item, key)) == ("kcl-worker-1", 42)
    assert worker_a.holders() == {"kcl-worker-1": [key]}

    forced = worker_a.take([key], force=True)

    assert [lease.lease_key for lease in forced.acquired] == [key]
    item = raw_item(key)
    assert item is not None
    assert (item["leaseOwner"], item["leaseCounter"], item["ownerSwitchesSinceCheckpoint"]) == (
        {"S": "worker-a"},
        {"N": "43"},
        {"N": "2"},
    )
    assert item["checkpoint"] == KCL_ITEM["checkpoint"]
    assert item["parentShardId"] == KCL_ITEM["parentShardId"]
    assert item["childShardIds"] == KCL_ITEM["childShardIds"]  # the KCL's own attributes are kept


def test_ensure_leases_creates_only_the_missing_ones(
    worker_a: LeaseManager, store: LeaseStore, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    (existing,) = make_leases(1)
    worker_a.take([existing])
    before = raw_item(existing)

    created = worker_a.ensure_leases([Lease(existing), Lease("shardId-new-1"), Lease("shardId-new-2")])

    assert sorted(lease.lease_key for lease in created) == ["shardId-new-1", "shardId-new-2"]
    assert raw_item(existing) == before
    assert sorted(lease.lease_key for lease in store.list_leases()) == [existing, "shardId-new-1", "shardId-new-2"]


def test_a_take_marks_each_lease_with_its_batch_in_the_same_write_and_skips_one_pending_another(
    worker_a: LeaseManager, store: LeaseStore, make_leases: MakeLeases, raw_item: RawItem, put_raw: PutRaw
) -> None:
    free, pending = make_leases(2)
    put_raw({**(raw_item(pending) or {}), "pendingBatchId": {"S": "batch-of-a-dead-run"}})

    result = worker_a.take([free, pending], pending_batch="batch-1")

    assert [lease.lease_key for lease in result.acquired] == [free] and result.lost_race == (pending,)
    assert result.acquired[0].pending_batch_id == "batch-1"
    assert (raw_item(free) or {})["pendingBatchId"] == {"S": "batch-1"}
    assert (raw_item(pending) or {})["pendingBatchId"] == {"S": "batch-of-a-dead-run"}
    assert "leaseOwner" not in (raw_item(pending) or {})


def test_a_take_from_leases_the_caller_just_read_reads_none_and_loses_the_ones_changed_since(
    worker_a: LeaseManager, worker_b: LeaseManager, store: LeaseStore, make_leases: MakeLeases,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    unchanged, changed = make_leases(2)
    surveyed = {lease.lease_key: lease for lease in store.list_leases()}
    worker_b.take([changed])
    worker_b.release()  # free again, with another counter than surveyed
    monkeypatch.setattr(store, "list_leases", lambda: pytest.fail("the take read the leases again"))

    result = worker_a.take([unchanged, changed, "shardId-unknown"], current=surveyed)

    assert [lease.lease_key for lease in result.acquired] == [unchanged]
    assert result.lost_race == (changed,) and result.missing == ("shardId-unknown",)


def test_take_keeps_the_leases_it_took_when_another_take_fails(
    store: LeaseStore, dynamodb: Any, table_name: str, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    first, bad, last = make_leases(3)
    armed = threading.Event()

    def clock() -> float:
        # take() reads the clock once after listing the leases: the bad item appears just then.
        if armed.is_set():
            armed.clear()
            corrupt(dynamodb, table_name, bad)
        return T0

    worker = LeaseManager(store, "worker-a", DURATION, clock=clock)
    armed.set()

    with pytest.raises(MalformedLeaseError, match=bad):
        worker.take([first, bad, last])

    held = worker.held()
    assert set(held) == {first, last}
    for key in (first, last):
        assert _owner(raw_item, key) == "worker-a"
        assert held[key].lease_counter == _counter(raw_item, key)
    assert worker.release([first, last]) == [first, last]


# -- holding -----------------------------------------------------------------------------------


def test_renew_moves_counter_and_expiry_of_every_held_lease(
    worker_a: LeaseManager, clock: Clock, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    keys = make_leases(3)
    worker_a.take(keys)
    clock.advance(3)

    assert worker_a.renew() == []

    for key in keys:
        item = raw_item(key)
        assert item is not None
        assert (item["leaseCounter"], item["leaseExpiresAt"]) == (
            {"N": "2"},
            {"N": str(int((T0 + 3 + DURATION) * 1000))},
        )
        assert worker_a.held()[key] == Lease.from_item(item)


def test_renew_keeps_the_leases_it_renewed_when_another_renewal_fails(
    worker_a: LeaseManager, dynamodb: Any, table_name: str, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    first, bad, last = make_leases(3)
    worker_a.take([first, bad, last])
    corrupt(dynamodb, table_name, bad)

    with pytest.raises(MalformedLeaseError, match=bad):
        worker_a.renew()

    held = worker_a.held()
    for key in (first, last):
        assert held[key].lease_counter == _counter(raw_item, key) == 2
    repair(dynamodb, table_name, bad)
    # The failed renewal did move the bad lease's counter; only that lease is reported lost.
    assert worker_a.renew() == [bad]
    assert worker_a.lost == {bad}
    assert set(worker_a.held()) == {first, last}
    assert _counter(raw_item, first) == _counter(raw_item, last) == 3


def test_fenced_raises_lease_lost_for_a_lease_not_held(
    worker_a: LeaseManager, store: LeaseStore, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    (key,) = make_leases(1)
    before = raw_item(key)

    with pytest.raises(LeaseLostError, match=key), worker_a.fenced(key) as settle:
        settle(store.update_application_fields(worker_a.lease(key), {"lastRunId": "r"}))

    assert raw_item(key) == before


def test_fenced_settles_the_new_lease_so_the_next_write_carries_its_counter(
    worker_a: LeaseManager, store: LeaseStore, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    (key,) = make_leases(1)
    worker_a.take([key])

    with worker_a.fenced(key) as settle:
        settle(store.update_application_fields(worker_a.lease(key), {"lastRunId": "run-1"}))

    item = raw_item(key)
    assert item is not None and item["lastRunId"] == {"S": "run-1"}
    assert worker_a.lease(key) == Lease.from_item(item)
    assert worker_a.renew() == []  # fenced on the settled counter, so it goes through
    assert _counter(raw_item, key) == 3


def test_fenced_write_that_fails_marks_the_lease_lost(
    worker_a: LeaseManager, worker_b: LeaseManager, store: LeaseStore, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    (key,) = make_leases(1)
    worker_a.take([key])
    worker_b.take([key], force=True)
    before = raw_item(key)

    with worker_a.fenced(key) as settle:
        settle(store.update_application_fields(worker_a.lease(key), {"lastRunId": "run-a"}))

    assert worker_a.lost == {key}
    assert worker_a.held() == {}
    assert raw_item(key) == before
    with pytest.raises(LeaseLostError):
        worker_a.lease(key)


def test_write_each_settles_every_outcome_and_marks_only_the_stolen_lease_lost(
    worker_a: LeaseManager, worker_b: LeaseManager, store: LeaseStore, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    stolen, *kept = make_leases(20)
    worker_a.take([stolen, *kept])
    worker_b.take([stolen], force=True)

    worker_a.write_each([stolen, *kept], lambda lease: store.update_application_fields(lease, {"lastRunId": "run-a"}))

    assert worker_a.lost == {stolen} and set(worker_a.held()) == set(kept)
    for key in kept:
        item = raw_item(key)
        assert item is not None and item["lastRunId"] == {"S": "run-a"}
        assert worker_a.lease(key) == Lease.from_item(item)  # the next write fences on the new counter
    assert worker_a.renew() == []
    stolen_item = raw_item(stolen)
    assert stolen_item is not None and "lastRunId" not in stolen_item


def test_write_each_refuses_before_writing_when_a_key_is_not_held(
    worker_a: LeaseManager, store: LeaseStore, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    held, not_held = make_leases(2)
    worker_a.take([held])
    before = raw_item(held)

    with pytest.raises(LeaseLostError, match=not_held):
        worker_a.write_each([held, not_held], lambda lease: store.update_application_fields(lease, {"lastRunId": "r"}))

    assert raw_item(held) == before


def test_taking_a_lost_lease_back_clears_it_from_lost(
    worker_a: LeaseManager, worker_b: LeaseManager, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    (key,) = make_leases(1)
    worker_a.take([key])
    worker_b.take([key], force=True)
    assert worker_a.renew() == [key]

    worker_a.take([key], force=True)

    assert worker_a.lost == set()
    assert set(worker_a.held()) == {key}
    assert _owner(raw_item, key) == "worker-a"


def test_adopt_reads_the_table_once_in_a_process_and_holds_the_newest_counters(
    store: LeaseStore, worker_a: LeaseManager, make_leases: MakeLeases, raw_item: RawItem,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    keys = make_leases(3)
    worker_a.take(keys[:2])
    worker_a.renew()
    scans = []
    list_leases = store.list_leases
    monkeypatch.setattr(store, "list_leases", lambda: scans.append(1) or list_leases())

    assert worker_a.adopt() == keys[:2] and scans == []  # it took them: it knows them
    resumed = LeaseManager(store, worker_a.worker_id, 60)  # the run's next step, in a process of its own
    assert resumed.adopt() == keys[:2] and resumed.adopt() == keys[:2] and scans == [1]

    held = resumed.held()
    assert {key: held[key].lease_counter for key in keys[:2]} == {key: _counter(raw_item, key) for key in keys[:2]}
    assert resumed.renew() == []  # none "lost" to ourselves on the next fenced write


# -- letting go --------------------------------------------------------------------------------


def test_release_releases_only_leases_this_worker_holds(
    worker_a: LeaseManager, worker_b: LeaseManager, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    mine, also_mine, theirs, free = make_leases(4)
    worker_a.take([mine, also_mine])
    worker_b.take([theirs])

    released = worker_a.release([mine, theirs, free, "shardId-unknown"])

    assert released == [mine]
    assert _owner(raw_item, mine) is None
    assert _owner(raw_item, also_mine) == "worker-a"
    assert _owner(raw_item, theirs) == "worker-b"
    assert (_owner(raw_item, free), _counter(raw_item, free)) == (None, 0)
    assert set(worker_a.held()) == {also_mine}

    assert worker_a.release() == [also_mine]

    assert _owner(raw_item, also_mine) is None
    assert worker_a.held() == {}


def test_release_leaves_a_lease_another_worker_took_meanwhile(
    worker_a: LeaseManager, worker_b: LeaseManager, make_leases: MakeLeases, raw_item: RawItem
) -> None:
    (key,) = make_leases(1)
    worker_a.take([key])
    worker_b.take([key], force=True)

    assert worker_a.release() == []

    assert (_owner(raw_item, key), _counter(raw_item, key)) == ("worker-b", 2)
    assert worker_a.held() == {}


def test_holders_lists_only_live_owners_with_their_leases(
    store: LeaseStore, make_leases: MakeLeases, put_raw: Callable[[dict[str, Any]], None], raw_item: RawItem
) -> None:
    a1, a2, b1, expired, free = make_leases(0, keys=["shard-a1", "shard-a2", "shard-b1", "shard-dead", "shard-free"])
    put_raw(KCL_ITEM)
    LeaseManager(store, "worker-a", DURATION, clock=Clock()).take([a2, a1])
    LeaseManager(store, "worker-b", DURATION, clock=Clock()).take([b1])
    LeaseManager(store, "worker-dead", DURATION, clock=Clock(T0 - DURATION - 1)).take([expired])
    observer = LeaseManager(store, "observer", DURATION, clock=Clock(T0 + 1))

    assert observer.holders() == {
        "kcl-worker-1": ["shardId-000000000004"],
        "worker-a": [a1, a2],
        "worker-b": [b1],
    }
    assert _owner(raw_item, expired) == "worker-dead"  # still written there, but not live
    assert _owner(raw_item, free) is None


@pytest.mark.parametrize(
    ("worker_id", "duration", "message"),
    [("", 10.0, "worker id"), ("w", 0.0, "positive"), ("w", -1.0, "positive")],
)
def test_manager_refuses_empty_worker_id_and_non_positive_duration(
    store: LeaseStore, worker_id: str, duration: float, message: str
) -> None:
    with pytest.raises(IllegalArgumentError, match=message):
        LeaseManager(store, worker_id, duration)
