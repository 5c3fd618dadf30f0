"""The crash tests' one scaffold: a ``kinesis-batch`` process in a session of its own that kills
itself -9 at a step (tests.faultpoints), how a test knows it died whole, and how the crashes of
one test run side by side with none outliving it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol, TypeVar

import pytest

from kinesis_batch import LeaseStore
from kinesis_batch.aws import dynamodb_client
from kinesis_batch.parsers import default_table
from tests import faultpoints
from tests.runs import REPO, session_is_gone

LEASE_SECONDS = 30  # the crashed worker's leases block others this long (the runs after it skip ahead)
CRASHED = "crashed-batch"  # the crashing run's id, so also its batch id
SUBPROCESS_ENV = {"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
SUBPROCESS_ARGS = ("--spark-master", "local[1]", "--read-limits", "none")


def after_expiry() -> float:
    """A clock past every lease the crashed worker held when it died."""
    return time.time() + LEASE_SECONDS + 1


def start_cli(*args: str, fault: tuple[str, str] | None = None) -> subprocess.Popen[str]:
    """``kinesis-batch ARGS`` as a process in a session of its own; ``fault``: (crash|freeze, step)."""
    return subprocess.Popen(
        faultpoints.command(*fault, *args) if fault else [sys.executable, "-m", "kinesis_batch.cli", *args],
        env={**os.environ, **SUBPROCESS_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=REPO,
    )


def start_crashing(stream: str, output: tuple[str, ...], step: str, *options: str) -> subprocess.Popen[str]:
    """``kinesis-batch run`` of ``stream`` into ``output`` (and ``options``) as worker ``crasher``
    of batch CRASHED, which kills itself -9 at ``step``."""
    run = ("run", "--stream", stream, *output, "--lease-seconds", str(LEASE_SECONDS), *options)
    return start_cli(*run, *SUBPROCESS_ARGS, "--worker-id", "crasher", "--run-id", CRASHED, fault=("crash", step))


def stopped(process: subprocess.Popen[str], timeout: float = 240.0) -> bool:
    """True once the process stopped itself (ps state T); False if it ended or never stopped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(process.pid)], capture_output=True, text=True).stdout
        if state.strip().startswith("T"):
            return True
        time.sleep(0.2)
    return False


def pending_batches(stream: str) -> dict[str, str]:
    store = LeaseStore(dynamodb_client(), default_table(stream))
    return {lease.lease_key: str(lease.pending_batch_id) for lease in store.list_leases() if lease.pending_batch_id}


def lease_owners(stream: str) -> dict[str, str]:
    store = LeaseStore(dynamodb_client(), default_table(stream))
    return {lease.lease_key: lease.lease_owner for lease in store.list_leases() if lease.lease_owner}


@contextmanager
def killed_at_exit(processes: list[subprocess.Popen[str]]) -> Iterator[None]:
    """Whatever happens in the block, no process started in it outlives it (its whole group)."""
    try:
        yield
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def died_at(process: subprocess.Popen[str] | None, step: str) -> str:
    """Wait for a crashing process; it must have killed itself -9 at ``step`` and left no process
    of its session behind (Spark's JVM, a Python worker). Its stderr."""
    assert process is not None, "the crashing process was never started"
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == -9, f"expected a kill -9 at {step}:\n{stderr[-2000:]}"
    assert session_is_gone(process.pid), "a process of the crashed run (Spark's JVM, a Python worker?) survived"
    return stderr


class Crashing(Protocol):
    step: str

    def start(self) -> subprocess.Popen[str]: ...


C = TypeVar("C", bound=Crashing)


def each_converges(crashes: Sequence[C], converges: Callable[[C], None], subtests: pytest.Subtests) -> None:
    """Start every crashing run side by side (their JVMs start at once), then check that each
    ``converges`` (a subtest per step); no process outlives it."""
    processes: list[subprocess.Popen[str]] = []
    with killed_at_exit(processes):
        processes.extend(crash.start() for crash in crashes)
        for crash in crashes:
            with subtests.test(step=crash.step):
                converges(crash)
