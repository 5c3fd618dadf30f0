"""One worker's leases: take, renew, release, and who holds what.

Expiry: every take and renew writes ``leaseExpiresAt = now + lease_duration``. A lease past
that time may be taken by anyone, so a crashed holder blocks its shards for at most one
lease duration (plus the clock skew between workers). Safety does not depend on clocks:
every write is fenced by ``leaseOwner`` + ``leaseCounter``, which each take increments, so a
holder that was too slow finds its next write refused and learns it lost the lease.

Thread safety: one lock serialises the manager's view of held leases, so the renewer and a
checkpoint commit never fence with the same counter. Use :meth:`fenced` for writes that must
carry the current counter.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from threading import RLock
from typing import TypeVar

from kinesis_batch.errors import IllegalArgumentError, LeaseLostError
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore

T = TypeVar("T")
R = TypeVar("R")

#: DynamoDB calls in flight at once for bulk lease operations (per worker).
CONCURRENCY = 16


@dataclass(frozen=True)
class TakeResult:
    acquired: tuple[Lease, ...] = ()
    held_elsewhere: dict[str, str] = field(default_factory=dict)  # shard -> live owner
    lost_race: tuple[str, ...] = ()  # changed between our read and our take
    missing: tuple[str, ...] = ()  # no lease item (create it first)
    seen: Mapping[str, Lease] = field(default_factory=dict)  # every lease as read for the take, by key


class LeaseManager:
    def __init__(
        self,
        store: LeaseStore,
        worker_id: str,
        lease_duration: float = 60.0,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not worker_id:
            raise IllegalArgumentError("a worker id must not be empty")
        if lease_duration <= 0:
            raise IllegalArgumentError(f"lease duration must be positive, got {lease_duration}")
        self.store = store
        self.worker_id = worker_id
        self.lease_duration = lease_duration
        self._clock = clock
        self._lock = RLock()
        self._held: dict[str, Lease] = {}
        self._known = False  # held is what this process took or adopted: no need to read it again
        self.lost: set[str] = set()

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def expiry(self) -> int:
        """When a lease taken or renewed now expires (ms): a fenced write that sets it renews."""
        return self.now_ms() + int(self.lease_duration * 1000)

    # -- taking -------------------------------------------------------------------------------

    def ensure_leases(self, leases: Iterable[Lease]) -> list[Lease]:
        """Create the lease items that do not exist yet; returns the ones created (each as it is
        in the table now)."""
        wanted = list(leases)
        created = _parallel(self.store.create_lease_if_not_exists, wanted)
        return [lease for lease, new in zip(wanted, created, strict=True) if new]

    def take(
        self,
        lease_keys: Iterable[str],
        *,
        force: bool = False,
        pending_batch: str | None = None,
        current: Mapping[str, Lease] | None = None,
    ) -> TakeResult:
        """Take every lease in ``lease_keys`` that is free, expired, ours, or (``force``) any;
        with ``pending_batch``, each is marked with that batch in the same fenced write (one with
        another batch pending is not taken: ``lost_race``). ``current``: the leases as the
        caller just read them (by key), instead of reading them again; a lease changed since
        is not taken (``lost_race``), one not in it is ``missing``.

        Leases held live by another worker are reported in ``held_elsewhere`` and not taken.
        """
        keys = list(dict.fromkeys(lease_keys))
        if current is None:
            current = {lease.lease_key: lease for lease in self.store.list_leases()}
        now = self.now_ms()
        candidates: list[Lease] = []
        held_elsewhere: dict[str, str] = {}
        missing: list[str] = []
        for key in keys:
            lease = current.get(key)
            if lease is None:
                missing.append(key)
            elif lease.lease_owner in (None, self.worker_id) or force or not lease.is_live(now):
                candidates.append(lease)
            else:
                held_elsewhere[key] = str(lease.lease_owner)
        outcomes = _parallel_outcomes(
            lambda lease: self.store.take_lease(lease, self.worker_id, self.expiry(), pending_batch=pending_batch),
            candidates,
        )
        acquired = tuple(new for new, _ in outcomes if new is not None)
        # Leases taken before another take failed are ours in the table: hold them all the same
        # (so they are renewed and released), then report the failure.
        with self._lock:
            self._known = True
            for lease in acquired:
                self._held[lease.lease_key] = lease
                self.lost.discard(lease.lease_key)
        _raise_first(outcomes)
        lost_race = tuple(c.lease_key for c, (new, _) in zip(candidates, outcomes, strict=True) if new is None)
        return TakeResult(acquired, held_elsewhere, lost_race, tuple(missing), current)

    # -- holding ------------------------------------------------------------------------------

    def adopt(self) -> list[str]:
        """Hold again every lease this worker owns in the table (a run's step resumed in another
        process, e.g. the next Airflow task). Returns their keys. A manager that took or adopted
        its leases in this process already keeps them and their counters current: it reads
        nothing again."""
        # Read under the lock: a renewal between the read and the update would leave us holding
        # the older counters, and our next fenced write would find the lease "lost" to ourselves.
        with self._lock:
            if self._known:
                return sorted(self._held)
            self._known = True
            mine = [lease for lease in self.store.list_leases() if lease.lease_owner == self.worker_id]
            for lease in mine:
                self._held[lease.lease_key] = lease
        return sorted(lease.lease_key for lease in mine)

    def held(self) -> dict[str, Lease]:
        with self._lock:
            return dict(self._held)

    def lost_leases(self) -> set[str]:
        """A copy of :attr:`lost`, taken under the lock (other threads change it)."""
        with self._lock:
            return set(self.lost)

    def taken_over(self) -> set[str]:
        """The held leases that another worker owns in the table now, or nobody does: a
        read-only check, for a process that holds the leases but does not renew them (a
        step whose leases another process renews; a write here would fence that one out)."""
        owners = {lease.lease_key: lease.lease_owner for lease in self.store.list_leases()}
        return {key for key in self.held() if owners.get(key) != self.worker_id}

    def renew(self, lease_keys: Iterable[str] | None = None) -> list[str]:
        """Renew every held lease (of ``lease_keys``, if given); returns the keys lost since (they
        are dropped from held).

        If some renewals fail with an error, the others still count (held leases carry their
        new counters, lost ones are in :attr:`lost`), and then the first error is raised.
        """
        with self._lock:
            keys = set(self._held) if lease_keys is None else set(lease_keys) & set(self._held)
            held = [lease for key, lease in self._held.items() if key in keys]
            outcomes = _parallel_outcomes(lambda lease: self.store.renew_lease(lease, self.expiry()), held)
            lost = []
            for old, (new, error) in zip(held, outcomes, strict=True):
                if error is not None:
                    continue  # outcome unknown: keep the copy we have, the next renewal tells
                if new is None:
                    del self._held[old.lease_key]
                    self.lost.add(old.lease_key)
                    lost.append(old.lease_key)
                else:
                    self._held[old.lease_key] = new
            _raise_first(outcomes)
            return lost

    @contextmanager
    def fenced(self, lease_key: str) -> Iterator[Callable[[Lease | None], None]]:
        """Hold the lock and the current lease for a fenced write.

        Yields ``settle``: call it with what the store returned (the new lease, or ``None``
        when the fence failed). Raises LeaseLostError if the lease is not held to begin with.
        Use: ``with manager.fenced(key) as settle: settle(store.write(manager.lease(key)))``.
        """
        with self._lock:
            self.lease(lease_key)

            def settle(new: Lease | None) -> None:
                self._settle(lease_key, new)

            yield settle

    def write_each(
        self, lease_keys: Iterable[str], write: Callable[[Lease], Lease | None], *, concurrency: int = 0
    ) -> None:
        """Fenced writes to several held leases, ``concurrency`` (default CONCURRENCY) in flight,
        in the order given when it is 1: ``write(current lease)``
        returns what the store returned, and each outcome is settled as :meth:`fenced` does.
        Holds the lock throughout, so no renewal fences with the same counters meanwhile.
        Raises LeaseLostError before writing if a key is not held; after every write ran, the
        first error any of them raised."""
        with self._lock:
            leases = [self.lease(key) for key in lease_keys]
            outcomes = _parallel_outcomes(write, leases, concurrency or CONCURRENCY)
            for old, (new, error) in zip(leases, outcomes, strict=True):
                if error is None:  # else the outcome is unknown: keep the copy we have
                    self._settle(old.lease_key, new)
            _raise_first(outcomes)

    def _settle(self, lease_key: str, new: Lease | None) -> None:
        """After a fenced write: None, the fence failed (lost); a lease without this owner, the
        write gave it up (a commit that released it); else its new copy. Under the lock."""
        if new is None:
            self._held.pop(lease_key, None)
            self.lost.add(lease_key)
        elif new.lease_owner != self.worker_id:
            self._held.pop(lease_key, None)
        else:
            self._held[lease_key] = new

    def lease(self, lease_key: str) -> Lease:
        """The current copy of a held lease; raises LeaseLostError if it is not held."""
        with self._lock:
            lease = self._held.get(lease_key)
        if lease is None:
            raise LeaseLostError(f"lease {lease_key} is not held by {self.worker_id}")
        return lease

    # -- letting go ---------------------------------------------------------------------------

    def release(self, lease_keys: Iterable[str] | None = None) -> list[str]:
        """Release held leases (all by default); returns the keys released.

        A lease another worker took meanwhile is left alone (the fenced release fails).
        """
        with self._lock:
            keys = list(self._held) if lease_keys is None else [k for k in lease_keys if k in self._held]
            leases = [self._held.pop(key) for key in keys]
        results = _parallel(self.store.release_lease, leases)
        return [lease.lease_key for lease, new in zip(leases, results, strict=True) if new is not None]

    def holders(self) -> dict[str, list[str]]:
        """Live owners and the lease keys each holds (expired holders are left out)."""
        now = self.now_ms()
        owners: dict[str, list[str]] = {}
        for lease in self.store.list_leases():
            if lease.is_live(now):
                owners.setdefault(str(lease.lease_owner), []).append(lease.lease_key)
        return {owner: sorted(keys) for owner, keys in sorted(owners.items())}


def _parallel_outcomes(
    call: Callable[[T], R], items: list[T], concurrency: int = CONCURRENCY
) -> list[tuple[R | None, Exception | None]]:
    """Like :func:`_parallel`, but one call's exception does not hide the other results."""

    def attempt(item: T) -> tuple[R | None, Exception | None]:
        try:
            return call(item), None
        except Exception as exc:
            return None, exc

    return _parallel(attempt, items, concurrency)


def _raise_first(outcomes: list[tuple[R | None, Exception | None]]) -> None:
    for _, error in outcomes:
        if error is not None:
            raise error


def _parallel(call: Callable[[T], R], items: list[T], concurrency: int = CONCURRENCY) -> list[R]:
    """``[call(i) for i in items]``, ``concurrency`` at a time (DynamoDB calls are I/O bound)."""
    if len(items) <= 1 or concurrency <= 1:
        return [call(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(items))) as pool:
        return list(pool.map(call, items))
