"""How long one control-plane call waits out throttles and dropped connections, and what the
process says and counts meanwhile.

Contract (:class:`Waiting`, one per call being retried):
- ``pause(attempt, error)`` gives the seconds to sleep before the next try (the backoff's full
  jitter, doubling to its cap), trimmed to what is left of the budget; once the budget is spent
  it raises ``error``. The budget is seconds slept, not tries: a fleet at the top of the hour
  meets more throttles than a count foresees, and a run has nothing else to do meanwhile.
- A failure that is no throttle (a refused, dropped or timed-out connection, a 5xx) waits at
  most FAILURE_CAP; an endpoint that fails FAILURES_IN_A_ROW times in a row with no throttle
  between is down, not busy: ``error`` is raised then, within about 13 s of waits, as a wrong
  endpoint URL should be.
- Every retryable failure is counted in :data:`TALLY` by operation and resource (the stream or
  table the call names): throttles, dropped or failed calls, seconds waited. A run's report
  reads what its own resources met since it began (:func:`met_since`).
- One progress line (a warning) once a call has waited 5 s, then one every 30 s:
  ``waiting on the account's DescribeStreamSummary limit: 14 throttles, 2 dropped or failed calls, 9 s``;
  with no throttle yet, it is the endpoint that fails, and the line says so:
  ``waiting on the endpoint for DescribeStreamSummary: 6 dropped or failed calls, 8 s``.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kinesis_batch import defaults
from kinesis_batch._backoff import Backoff
from kinesis_batch.errors import IllegalArgumentError, RetryableError, ThrottledError

log = logging.getLogger(__name__)

#: The environment variable that sets one call's budget (seconds), for every run of the process.
WAIT_ENV = "KINESIS_BATCH_CONTROL_PLANE_WAIT_SECONDS"
FIRST_LINE_AFTER = 5.0  # seconds waited before the first progress line
LINE_EVERY = 30.0  # seconds waited between progress lines
FAILURES_IN_A_ROW = 10  # tries that fail with no throttle between: the endpoint is down
FAILURE_CAP = 5.0  # seconds at most before the next try after a failure that is no throttle


def wait_seconds(environ: Mapping[str, str] | None = None) -> float:
    """One call's budget: ``KINESIS_BATCH_CONTROL_PLANE_WAIT_SECONDS``, else the default."""
    text = (os.environ if environ is None else environ).get(WAIT_ENV, "").strip()
    if not text:
        return defaults.CONTROL_PLANE_WAIT_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        raise IllegalArgumentError(f"{WAIT_ENV}={text!r}: expected seconds, 0 or more")
    return seconds


@dataclass(frozen=True)
class Waited:
    """What calls met: throttles, dropped or failed calls (the other retryable errors), and
    seconds slept before their next tries."""

    throttles: int = 0
    failures: int = 0
    seconds: float = 0.0

    def __add__(self, other: Waited) -> Waited:
        return Waited(self.throttles + other.throttles, self.failures + other.failures, self.seconds + other.seconds)

    def __sub__(self, other: Waited) -> Waited:
        return Waited(self.throttles - other.throttles, self.failures - other.failures, self.seconds - other.seconds)

    def to_json(self) -> dict[str, float]:
        return {"throttles": self.throttles, "failures": self.failures, "seconds": round(self.seconds, 3)}


def total(mets: Iterable[Waited]) -> Waited:
    """What several calls (or operations) met, together."""
    return sum(mets, Waited())


Counts = dict[tuple[str, str], Waited]  # (operation, resource) -> what its calls met


class Tally:
    """The process's :class:`Waited` by operation and resource; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counts = {}

    def add(self, operation: str, resource: str, error: RetryableError, seconds: float) -> None:
        throttled = isinstance(error, ThrottledError)
        met = Waited(int(throttled), int(not throttled), seconds)
        with self._lock:
            self._counts[(operation, resource)] = self._counts.get((operation, resource), Waited()) + met

    def snapshot(self) -> Counts:
        with self._lock:
            return dict(self._counts)


def met_since(before: Counts, after: Counts, resources: frozenset[str]) -> dict[str, Waited]:
    """What the calls naming ``resources`` met between two snapshots, by operation (only those
    that met something)."""
    met: dict[str, Waited] = {}
    for (operation, resource), now in sorted(after.items()):
        if resource in resources:
            grown = now - before.get((operation, resource), Waited())
            if grown != Waited():
                met[operation] = met.get(operation, Waited()) + grown
    return met


TALLY = Tally()


class Waiting:
    def __init__(
        self, operation: str, backoff: Backoff, budget: float, *, resource: str = "", tally: Tally = TALLY
    ) -> None:
        self._operation = operation or "control-plane"
        self._resource = resource
        self._backoff = backoff
        self._budget = budget
        self._tally = tally
        self._waited = 0.0
        self._throttles = 0
        self._failures = 0
        self._in_a_row = 0
        self._next_line = FIRST_LINE_AFTER

    def pause(self, attempt: int, error: RetryableError) -> float:
        """Seconds to sleep before try ``attempt + 1``; raises ``error`` once the budget is spent."""
        throttled = isinstance(error, ThrottledError)
        left = self._budget - self._waited
        self._throttles, self._failures = self._throttles + throttled, self._failures + (not throttled)
        self._in_a_row = 0 if throttled else self._in_a_row + 1
        if left <= 0 or self._in_a_row >= FAILURES_IN_A_ROW:
            self._tally.add(self._operation, self._resource, error, 0.0)
            raise error
        pause = min(self._backoff.delay(attempt), left, math.inf if throttled else FAILURE_CAP)
        self._tally.add(self._operation, self._resource, error, pause)
        self._waited += pause
        if self._waited >= self._next_line:
            self._next_line += LINE_EVERY
            if self._throttles:
                log.warning(
                    "waiting on the account's %s limit: %d throttles, %d dropped or failed calls, %.0f s",
                    *(self._operation, self._throttles, self._failures, self._waited),
                )
            else:
                log.warning(
                    "waiting on the endpoint for %s: %d dropped or failed calls, %.0f s",
                    *(self._operation, self._failures, self._waited),
                )
        return pause


__all__ = [
    "FAILURES_IN_A_ROW",
    "FAILURE_CAP",
    "TALLY",
    "WAIT_ENV",
    "Counts",
    "Tally",
    "Waited",
    "Waiting",
    "met_since",
    "total",
    "wait_seconds",
]
