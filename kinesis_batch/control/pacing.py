"""The process's pace under the account's control-plane limits.

Contract (:class:`Pacer`, one per process: :data:`PACER`):
- ``turn(operation, account, resource)`` claims this call's turn and returns the seconds to
  wait for it (the caller sleeps them, on its own clock): calls of one operation for one account
  (and one stream, for a stream-scoped limit) start at least the key's interval apart, whichever
  thread makes them. An operation without a documented limit never waits.
- ``answered(..., throttled)`` adapts the interval: a throttle doubles it (up to
  MAX_INTERVAL), an answer halves it, never below ``1 / per_second`` of the documented limit
  (kinesis_batch.control.limits). A process cannot see other processes' calls;
  their throttles tell it the account's budget is shared, and it slows down until they stop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kinesis_batch.control.limits import STREAM, rate_of

# Seconds between one key's first tries, however many throttles: a process still asks once a
# second (its retries wait their own backoff), and a few answers bring it back to the limit.
MAX_INTERVAL = 1.0


class Pacer:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._next: dict[tuple[str, str, str], float] = {}  # key -> earliest next start
        self._interval: dict[tuple[str, str, str], float] = {}  # key -> seconds between starts

    def _key(self, operation: str, account: str, resource: str) -> tuple[tuple[str, str, str], float] | None:
        rate = rate_of(operation)
        if rate is None:
            return None
        return (operation, account, resource if rate.scope == STREAM else ""), 1.0 / rate.per_second

    def turn(self, operation: str, account: str, resource: str) -> float:
        """Claim this call's turn; returns the seconds until it comes."""
        keyed = self._key(operation, account, resource)
        if keyed is None:
            return 0.0
        key, least = keyed
        with self._lock:
            now = self._clock()
            start = max(now, self._next.get(key, now))
            self._next[key] = start + self._interval.get(key, least)
        return start - now

    def answered(self, operation: str, account: str, resource: str, *, throttled: bool) -> None:
        """A call of this key was answered (``throttled``: refused for the limit)."""
        keyed = self._key(operation, account, resource)
        if keyed is None:
            return
        key, least = keyed
        with self._lock:
            interval = self._interval.get(key, least)
            self._interval[key] = min(MAX_INTERVAL, interval * 2) if throttled else max(least, interval / 2)

    def forget(self) -> None:
        """Forget every key's pace, as a new process starts (a test's process runs many)."""
        with self._lock:
            self._next.clear()
            self._interval.clear()

    def interval(self, operation: str, account: str, resource: str) -> float:
        """The seconds between this key's calls now (0 for an operation without a limit)."""
        keyed = self._key(operation, account, resource)
        if keyed is None:
            return 0.0
        with self._lock:
            return self._interval.get(keyed[0], keyed[1])


PACER = Pacer()

__all__ = ["MAX_INTERVAL", "PACER", "Pacer"]
