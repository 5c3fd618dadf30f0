"""Crash safety: kill -9 the whole run (CLI, Spark's JVM, Python workers) at each step; later runs
by another worker converge to exactly-once output. And two runs started at the same moment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kinesis_batch import LeaseStore
from kinesis_batch.aws import dynamodb_client
from kinesis_batch.config import default_table
from kinesis_batch.output.parquet import ParquetSink
from tests.runs import REPO, assert_exactly_once, assert_per_key_order, cli, diamond_stream, read_output
from tests.streams import StreamFactory

LEASE_SECONDS = 10  # the crashed worker's leases block others this long


def start_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kinesis_batch.cli", *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=REPO,
    )


def group_is_gone(pgid: int, timeout: float = 10.0) -> bool:
    """True once no live process is left in the group (zombies waiting to be reaped do not count)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = subprocess.run(["ps", "-o", "stat=", "-g", str(pgid)], capture_output=True, text=True).stdout.split()
        if all(state.startswith("Z") for state in states):
            return True
        time.sleep(0.2)
    return False


def pending_batches(stream: str) -> dict[str, str]:
    store = LeaseStore(dynamodb_client(), default_table(stream))
    return {lease.lease_key: str(lease.pending_batch_id) for lease in store.list_leases() if lease.pending_batch_id}


@pytest.mark.parametrize("step", ["reading", "read", "staged", "published", "committed"])
def test_kill_9_at_any_step_then_another_worker_converges_to_exactly_once(
    step: str,
    kinesis,
    streams: StreamFactory,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 150)
    output = tmp_path / "out"
    run = ("run", "--stream", name, "--output", str(output), "--lease-seconds", str(LEASE_SECONDS))

    crashing = start_cli(*run, "--worker-id", "crasher", env={"KINESIS_BATCH_CRASH_AT": step})
    _, stderr = crashing.communicate(timeout=300)
    assert crashing.returncode == -9, f"expected a kill -9 at {step}:\n{stderr[-2000:]}"
    assert group_is_gone(crashing.pid), "a process of the run (Spark's JVM?) survived the kill"
    if step in ("reading", "read", "staged"):
        assert read_output(output) == {}, "nothing may be visible before publish"
    if step != "committed":
        assert pending_batches(name), "the crashed run left its batch pending on the leases"

    time.sleep(LEASE_SECONDS + 1)  # the dead worker's leases expire
    recovery = cli(*run, "--worker-id", "recoverer", "--json")
    assert recovery.returncode == 0, recovery.stderr
    report = json.loads(recovery.stdout)
    outcomes = set(report["recovered"].values())
    if step == "published":  # shards with nothing new were not in the batch: only their marker is cleared
        assert "rolled forward" in outcomes and outcomes <= {"rolled forward", "cleared"}
    elif step != "committed":
        assert outcomes == {"discarded"}

    settle = cli(*run, "--worker-id", "settler", "--json")  # children of shards ended in the recovery
    assert settle.returncode == 0, settle.stderr
    rows = read_output(output)
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
    assert pending_batches(name) == {}
    staging = output / "_staging"
    assert not staging.exists() or not any(staging.iterdir()), "a staged batch was left behind"
    assert len(ParquetSink(output).published_batches()) == (1 if step in ("published", "committed") else 0) + sum(
        1 for r in (recovery, settle) if json.loads(r.stdout)["published"]
    )


def test_two_runs_started_at_the_same_moment_never_read_a_shard_twice(
    kinesis,
    streams: StreamFactory,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 150)
    output = tmp_path / "out"
    run = ("run", "--stream", name, "--output", str(output), "--json")

    first, second = start_cli(*run, "--worker-id", "one"), start_cli(*run, "--worker-id", "two")
    reports = []
    for process in (first, second):
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr[-2000:]
        reports.append(json.loads(stdout))
    read_by = [{s["shard_id"] for s in r["shards"]} for r in reports]
    assert not read_by[0] & read_by[1], f"shards read by both runs: {read_by[0] & read_by[1]}"

    while True:  # later runs pick up children whose parents the other run finished
        report = json.loads(cli(*run, "--worker-id", "later").stdout)
        if not report["published"]:
            break
    rows = read_output(output)
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
