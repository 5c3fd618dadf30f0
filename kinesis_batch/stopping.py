"""Stopping when told: a request to stop, made from a signal handler or another thread, that the
work honours at its next safe point (a catch-up run: kinesis_batch.run.catch_up; a maintenance:
between its steps).

- :class:`StopRequest` is the request. The first :meth:`StopRequest.request` wins; what the
  work registered with :meth:`StopRequest.on_request` (a run: cancel its Spark job) is called in
  a thread of its own, since a signal handler must not wait on a lock or a socket.
- :func:`stopping_on_signals` is how a process's own signals make that request: the first
  SIGINT or SIGTERM asks for a clean stop; a second one, or ``timeout`` seconds without the
  clean stop done, ends the process at once (exit 128 + the signal), as a crash would: its
  leases lapse and the next run settles its batch. The command line and Dagster's steps use
  it; Airflow calls the operator's ``on_kill`` instead (kinesis_batch.airflow.steps).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from kinesis_batch.errors import ShutdownError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """Whether, and by which signal, the work was asked to stop. Thread-safe; ``request`` may be
    called from a signal handler."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # re-entrant: a signal handler may interrupt its own thread holding it
        self._signal: int | None = None
        self._callbacks: list[Callable[[], None]] = []

    @property
    def requested(self) -> bool:
        return self._signal is not None

    @property
    def signal_name(self) -> str:
        return signal.Signals(self._signal).name if self._signal is not None else ""

    def request(self, signal_number: int) -> bool:
        """Ask the work to stop; True for the first request, False when one was made already.
        The registered callbacks run in a thread of their own (never in a signal handler)."""
        with self._lock:
            if self._signal is not None:
                return False
            self._signal = signal_number
            callbacks = list(self._callbacks)
        if callbacks:
            threading.Thread(target=_call_each, args=(callbacks,), name="kinesis-batch-stop", daemon=True).start()
        return True

    @contextmanager
    def on_request(self, callback: Callable[[], None]) -> Iterator[None]:
        """Call ``callback`` (from another thread) when a stop is asked for during the block, or
        at once if it was asked for already."""
        with self._lock:
            self._callbacks.append(callback)
            asked = self._signal is not None
        if asked:
            callback()
        try:
            yield
        finally:
            with self._lock:
                self._callbacks.remove(callback)

    def check(self, where: str) -> None:
        """Raise ShutdownError when a stop was asked for (``where``: the safe point, for the line)."""
        if self._signal is not None:
            raise self.error(f"stopped {where}")

    def error(self, what: str) -> ShutdownError:
        """The one line of work stopped by this request: ``interrupted by SIGTERM: <what>``."""
        assert self._signal is not None, "no stop was asked for"
        return ShutdownError(f"interrupted by {self.signal_name}: {what}", signal_number=self._signal)


def _call_each(callbacks: list[Callable[[], None]]) -> None:
    for callback in callbacks:
        callback()


@contextmanager
def stopping_on_signals(
    stop: StopRequest, *, timeout: float, say: Callable[[str], None] = lambda line: None
) -> Iterator[None]:
    """For the block, SIGINT and SIGTERM ask ``stop`` for a clean stop; a second signal, or the
    clean stop not done within ``timeout`` seconds, exits the process at once with 128 + the
    signal's number and one line. ``say`` tells the user the stop was heard (written from the
    signal handler: it must not take locks, like print would). The previous handlers come back
    after the block. Outside the main thread (where Python runs no handler) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    timers: list[threading.Timer] = []

    def handle(signal_number: int, frame: FrameType | None) -> None:
        name = signal.Signals(signal_number).name
        if not stop.request(signal_number):
            _exit_now(signal_number, f"interrupted by {name} again: stopped at once")
        say(f"{name}: stopping at the next safe point (within {timeout:g} s; {name} again stops at once)")
        timer = threading.Timer(
            timeout, _exit_now, (signal_number, f"interrupted by {name}: not stopped within {timeout:g} s")
        )
        timer.daemon = True
        timers.append(timer)
        timer.start()

    previous: dict[signal.Signals, Any] = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    for number in STOP_SIGNALS:
        signal.signal(number, handle)
    try:
        yield
    finally:
        for timer in timers:  # stopped in time: the block's own end
            timer.cancel()
        for restored, handler in previous.items():
            signal.signal(restored, handler)


def _exit_now(signal_number: int, line: str) -> None:
    """End the process at once, as a crash would (the next run settles what it left)."""
    os.write(2, f"kinesis-batch: error: {line}; the leases lapse and the next run settles what was left\n".encode())
    os._exit(128 + signal_number)


def say_on_stderr(line: str) -> None:
    """A line on stderr from a signal handler: one write, no lock."""
    os.write(2, f"kinesis-batch: {line}\n".encode())


__all__ = ["STOP_SIGNALS", "StopRequest", "say_on_stderr", "stopping_on_signals"]
