"""Fault injection at a run's named steps, for the crash, freeze and zombie tests (test code only:
production code has no fault switch, only observers of its steps, kinesis_batch.events).

:class:`FaultAt` is an observer that acts when the run reaches its step:

- ``crash STEP``: kill -9 the run's whole process group (driver, Spark's JVM) at a driver-side
  step; at ``reading`` (a Spark task wrote a shard's first rows) the whole session, from the
  task's Python worker (pyspark's worker daemon has a process group of its own);
  ``crash task``: kill -9 only that Python worker, in the task's first attempt, so Spark
  retries the task; ``crash-driver STEP``: kill -9 the driver's process group (``pid``, a
  command started in a session of its own) from wherever the step is seen: on a Spark Connect
  server's worker at ``reading``, the client dies mid-read and the server lives on;
- ``freeze STEP``: SIGSTOP the driver at a driver-side step, as a long pause would; at
  ``reading``, the driver, the JVM and the worker itself, once, in the task's first attempt;
- ``sigint STEP`` / ``sigterm STEP``: send the driver (``pid``) SIGINT or SIGTERM, once, as
  Ctrl-C, a ``kill``, an orchestrator would (SIGINT to the driver's whole process group when it
  leads one, as a terminal does); at ``reading`` the task then stays in its read (a stop must
  cancel it); ``sigterm-twice STEP``: two SIGTERMs half a second apart; ``sigterm-stall STEP``:
  SIGTERM, then the driver stalls there for a minute (past any --stop-timeout of a test);
- ``delete-stream STEP``: delete the run's stream at a driver-side step (a stream deleted mid-run),
  and wait until Kinesis says it is gone.

An action written ``ACTION:STREAM`` acts at that stream's steps only (a group's runs share one
process, so they share its observers).

``python -m tests.faultpoints crash|freeze STEP kinesis-batch ARGS...`` is the command line with
such an observer installed: the crash and zombie tests start their runs this way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kinesis_batch.events import STEPS, Event

REPO = Path(__file__).resolve().parents[1]
ACTIONS = ("crash", "crash-driver", "freeze", "sigint", "sigterm", "sigterm-twice", "sigterm-stall", "delete-stream")
_FROZEN = threading.Lock()
_FROZEN_ONCE: list[bool] = []  # per process: a worker freezes the run once


@dataclass(frozen=True)
class FaultAt:
    """An observer (it pickles: the run ships it to its Spark tasks) that crashes or freezes the
    run at ``step``; ``batch_id`` set: only that batch's run."""

    action: str  # one of ACTIONS
    step: str  # one of STEPS, or "task" (crash only)
    batch_id: str | None = None
    pid: int | None = None  # the signals' driver
    stream: str | None = None  # set: only that stream's run (its driver-side steps)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS or self.step not in (*STEPS, "task"):
            raise ValueError(f"not a fault: {self.action} {self.step}")
        if self.action == "delete-stream" and (self.stream is None or self.step == "reading"):
            raise ValueError("delete-stream: a stream's driver-side step, as delete-stream:STREAM STEP")

    def __call__(self, event: Event) -> None:
        if self.batch_id is not None and event.batch_id != self.batch_id:
            return
        if self.stream is not None and event.stream != self.stream:
            return
        if self.action == "delete-stream":
            if event.step == self.step:
                _delete(self.stream)
            return
        in_task = event.step == "reading"
        if self.action.startswith("sig"):
            if event.step == self.step:
                self._signal(in_task)
            return
        if self.step == "task" and in_task and self.action == "crash":
            if _first_attempt():
                os.kill(os.getpid(), signal.SIGKILL)
            return
        if event.step != self.step:
            return
        if self.action == "crash-driver":
            assert self.pid is not None, "crash-driver needs the driver's pid"
            with contextlib.suppress(ProcessLookupError):  # each thread of the task sees the step
                os.killpg(self.pid, signal.SIGKILL)
        elif self.action == "crash":
            os.killpg(os.getsid(0) if in_task else os.getpgrp(), signal.SIGKILL)
        elif not in_task:
            os.kill(os.getpid(), signal.SIGSTOP)
        elif _first_attempt():
            with _FROZEN:
                if not _FROZEN_ONCE:
                    _FROZEN_ONCE.append(True)
                    os.killpg(os.getsid(0), signal.SIGSTOP)
                    os.kill(os.getpid(), signal.SIGSTOP)

    def _signal(self, in_task: bool) -> None:
        """Once per driver (the task's threads and attempts each see ``reading``)."""
        assert self.pid is not None, "a signal fault needs the driver's pid"
        try:
            os.close(os.open(Path(tempfile.gettempdir(), f"kb-signalled-{self.pid}"), os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return
        if self.action == "sigint" and os.getpgid(self.pid) == self.pid:
            os.killpg(self.pid, signal.SIGINT)  # Ctrl-C: the terminal's whole foreground group
        else:
            os.kill(self.pid, signal.SIGINT if self.action == "sigint" else signal.SIGTERM)
        if self.action == "sigterm-twice":
            time.sleep(0.5)
            os.kill(self.pid, signal.SIGTERM)
        if in_task or self.action == "sigterm-stall":
            time.sleep(60)  # still reading (or stalled) when the stop comes: it must not wait for this


def _delete(stream: str | None) -> None:
    from kinesis_batch.aws import kinesis_client

    kinesis = kinesis_client()
    kinesis.delete_stream(StreamName=stream, EnforceConsumerDeletion=True)
    kinesis.get_waiter("stream_not_exists").wait(StreamName=stream, WaiterConfig={"Delay": 1, "MaxAttempts": 60})


def forget_signals(pid: int) -> None:
    """Let a driver pid be signalled again (pids are reused; in-process tests share one)."""
    Path(tempfile.gettempdir(), f"kb-signalled-{pid}").unlink(missing_ok=True)


def _first_attempt() -> bool:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context is not None and context.attemptNumber() == 0


def command(action: str, step: str, *args: str) -> list[str]:
    """The argv of ``kinesis-batch ARGS`` that crashes or freezes at ``step``."""
    return [sys.executable, "-m", "tests.faultpoints", action, step, *args]


def main(argv: list[str]) -> int:
    from kinesis_batch import cli, events

    fault, step, *args = argv
    action, _, stream = fault.partition(":")
    # Spark's Python workers unpickle the observer, so they must find this module too: the JVM
    # passes PYTHONPATH on to them.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    forget_signals(os.getpid())
    events.observe(FaultAt(action, step, pid=os.getpid(), stream=stream or None), in_tasks=True)
    return cli.main(args)


if __name__ == "__main__":
    # As tests.faultpoints, not __main__: the observer then pickles by reference (its module's lock
    # stays behind), and Spark's Python workers import this module to unpickle it.
    from tests.faultpoints import main as imported_main

    sys.exit(imported_main(sys.argv[1:]))
