"""Who has a lost lease now: the one line a run that lost leases ends with.

The line names every lost shard and the worker that has it now. A lease nobody holds any more
was taken, worked on and let go by another worker meanwhile; the shard's last committed move
(the checkpoint history) says which worker and which batch, when that was not us.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from kinesis_batch.errors import NOTHING_PUBLISHED
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore


class Move(Protocol):
    """A committed checkpoint move, as the history keeps it."""

    @property
    def owner(self) -> str | None: ...
    @property
    def batch_id(self) -> str: ...


class Moves(Protocol):
    def for_shard(self, lease_key: str) -> Sequence[Move]:
        """The shard's committed moves, oldest first."""
        ...


def lost_line(store: LeaseStore, history: Moves, keys: Collection[str], *, worker_id: str, when: str) -> str:
    """``lost the leases of A, B to w2; C to w3 (which committed batch X and let go) <when>;
    nothing was published``. Read-only."""
    holders: dict[str, list[str]] = {}
    for lease in store.list_leases():
        if lease.lease_key in keys:
            holders.setdefault(_holder(lease, history, worker_id), []).append(lease.lease_key)
    lost = "; ".join(f"{', '.join(sorted(shards))} to {holder}" for holder, shards in sorted(holders.items()))
    return f"lost the leases of {lost} {when}; {NOTHING_PUBLISHED}"


def _holder(lease: Lease, history: Moves, worker_id: str) -> str:
    if lease.lease_owner:
        return lease.lease_owner
    moves = history.for_shard(lease.lease_key)
    if moves and moves[-1].owner != worker_id:  # it took over, finished, let go
        return f"{moves[-1].owner} (which committed batch {moves[-1].batch_id} and let go)"
    return "another worker (which let go since)"


__all__ = ["lost_line"]
