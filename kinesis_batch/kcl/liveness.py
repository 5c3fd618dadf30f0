"""Whether a KCL application is running, told from its lease table alone.

KCL keeps no expiry time: its workers renew a lease by bumping ``leaseCounter`` about every
third of the failover time (10 s by default), and others judge a lease alive while its counter
moves. So an application is taken as stopped when no counter moves for a few failover periods,
and no checkpoint is in flight (``pendingCheckpoint``, KCL's two-phase checkpoint).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from kinesis_batch.errors import InvalidStateError

#: Three of KCL's default failover periods: a live worker renews about nine times meanwhile.
WATCH_SECONDS = 30.0


def ensure_stopped(
    counters: Callable[[], Mapping[str, int]],
    table: str,
    *,
    seconds: float = WATCH_SECONDS,
    interval: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, int]:
    """Watch ``counters()`` (leaseKey -> leaseCounter) for ``seconds``; raise InvalidStateError
    with one line when one moves (or a lease appears or goes). Returns the counters as last
    seen: what a write to the table is then fenced on."""
    first = dict(counters())
    deadline = clock() + seconds
    while True:
        sleep(min(interval, max(0.0, deadline - clock())))
        now = dict(counters())
        moved = sorted(key for key in first.keys() | now.keys() if first.get(key) != now.get(key))
        if moved:
            key = moved[0]
            raise InvalidStateError(
                f"the KCL application of {table} is running: the leaseCounter of {key} went from {first.get(key)} "
                f"to {now.get(key)} within {seconds:g} s; stop every worker of it first"
            )
        if clock() >= deadline:
            return now


__all__ = ["WATCH_SECONDS", "ensure_stopped"]
