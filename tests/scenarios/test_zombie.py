"""Fencing: a run frozen (SIGSTOP) past its lease, after its last lease check or in the middle
of its read, while another worker recovers its batch and reads the same range again, can never
publish when thawed. It ends with exit 3 and the lease-lost line (and its OpenLineage run with
ABORT); the output stays exactly once. For every output format."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import LeaseStore
from kinesis_batch.run import CatchUpRun
from tests import faultpoints
from tests.openlineage.support import events, file_transport
from tests.output.support import output_args, read_rows, run_config, sink_of
from tests.runs import REPO, assert_exactly_once, diamond_stream
from tests.streams import StreamFactory

pytestmark = pytest.mark.isolated("a frozen run")

# Long enough that a loaded CI machine never lets the zombie's own renewals lapse before it
# freezes; it costs no time, since the recoverer's clock is set past it.
LEASE_SECONDS = 60
ZOMBIE = "zombie-batch"  # the run id (and batch id) of the run that freezes while reading
EVERY_FORMAT = pytest.mark.parametrize(
    ("format", "where"), [("parquet", "local"), ("delta", "s3"), ("iceberg", "local")], ids=str
)


def frozen(pid: int, timeout: float = 120.0) -> bool:
    """True once the process is stopped (ps state T)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
        if state.startswith("T"):
            return True
        if not state:
            return False
        time.sleep(0.2)
    return False


def start_zombie(
    step: str, name: str, output: tuple[str, ...], *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``kinesis-batch run`` as worker "zombie", in a session of its own, freezing at ``step``
    (``env``: added to this process's environment)."""
    run = ("run", "--stream", name, *output, "--lease-seconds", str(LEASE_SECONDS), "--worker-id", "zombie")
    return subprocess.Popen(
        faultpoints.command("freeze", step, *run, "--read-limits", "none", *extra),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=REPO,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def recoverer(name: str, output: tuple[str, ...], kinesis: Any, dynamodb: Any, spark: Any) -> CatchUpRun:
    """Another worker's run on the same output, on the shared Spark, whose clock is past the
    zombie's lease."""
    config = run_config(name, output, "recoverer", lease_seconds=LEASE_SECONDS)
    return CatchUpRun(
        config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark, clock=lambda: time.time() + LEASE_SECONDS + 1
    )


@EVERY_FORMAT
def test_a_run_frozen_past_its_lease_cannot_publish_after_another_worker_recovered_its_batch(
    format: str,
    where: str,
    kinesis: Any,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 40)
    output = output_args(format, where, tmp_path, monkeypatch)

    # The zombie: it read everything, checked its leases, and freezes just before publishing.
    zombie = start_zombie("staged", name, output)
    try:
        assert frozen(zombie.pid), f"the run did not freeze: {zombie.communicate(timeout=60)[1][-2000:]}"

        # Another worker, past the zombie's lease by its clock: recovery discards the zombie's
        # batch and the same range is read again into a batch of its own.
        recovery = recoverer(name, output, kinesis, dynamodb, spark)
        report = recovery.run()
        assert set(report.recovered.values()) == {"discarded"}, report.recovered
        assert report.published
    finally:
        with contextlib.suppress(ProcessLookupError):  # it already ended: the assertion above says how
            os.killpg(zombie.pid, signal.SIGCONT)  # thaw
    _, stderr = zombie.communicate(timeout=120)

    lines = [line for line in stderr.splitlines() if line.startswith("kinesis-batch:")]
    assert zombie.returncode == 3, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert len(lines) == 1 and "discarded" in lines[0] and "nothing was published" in lines[0], stderr[-3000:]

    sink = sink_of(output, app=f"kinesis-batch-{name}", stream=name)
    rows = read_rows(sink)
    assert_exactly_once(rows, sent)
    assert set(rows["batch_id"]) == {report.batch_id}, "the zombie's batch reached the output"
    status = json.dumps([lease.pending_batch_id for lease in recovery.store.list_leases()])
    assert status == json.dumps([None] * len(recovery.store.list_leases())), "a pending marker was left"


def thaw(sid: int) -> None:
    """SIGCONT every process of the session: the driver and JVM, and the Python worker that froze
    (pyspark's workers have a process group of their own)."""
    listed = subprocess.run(["ps", "-o", "pid=", "-s", str(sid)], capture_output=True, text=True).stdout.split()
    for pid in map(int, listed):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


@EVERY_FORMAT
def test_a_run_frozen_while_reading_then_thawed_after_another_worker_finished_exits_3_with_one_line(
    format: str,
    where: str,
    kinesis: Any,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 40)
    output = output_args(format, where, tmp_path, monkeypatch)

    # The zombie freezes mid-read (its driver, JVM and the Python worker that wrote rows): the
    # lease renewer stops with it, and its leases lapse.
    lineage = tmp_path / "lineage.jsonl"
    zombie = start_zombie(
        "reading", name, output, "--spark-master", "local[1]", "--run-id", ZOMBIE, env=file_transport(lineage)
    )
    try:
        assert frozen(zombie.pid), f"the run did not freeze: {zombie.communicate(timeout=60)[1][-2000:]}"
        report = recoverer(name, output, kinesis, dynamodb, spark).run()
        assert report.published and set(report.recovered.values()) == {"discarded"}, report
    finally:
        thaw(zombie.pid)
    _, stderr = zombie.communicate(timeout=120)

    lines = [line for line in stderr.splitlines() if line.startswith("kinesis-batch:")]
    assert zombie.returncode == 3, stderr[-3000:]
    assert "Traceback" not in stderr and "PythonException" not in stderr, stderr[-3000:]
    assert len(lines) == 1, stderr[-3000:]
    assert "lost the leases of shardId-" in lines[0] and "nothing was published" in lines[0], lines
    start, abort = events(lineage)  # a lost lease ends its OpenLineage run as ABORT, with the line
    assert (start["eventType"], abort["eventType"]) == ("START", "ABORT")
    assert abort["run"]["facets"]["errorMessage"]["message"] in lines[0]
    assert f"to recoverer (which committed batch {report.batch_id} and let go)" in lines[0], lines
    sink = sink_of(output, app=f"kinesis-batch-{name}", stream=name)
    rows = read_rows(sink)
    assert_exactly_once(rows, sent)
    assert set(rows["batch_id"]) == {report.batch_id}, "the zombie's batch reached the output"
    # What the thawed read wrote after its batch was discarded (an S3 upload completes) is gone too.
    assert not sink.staging(ZOMBIE).exists() and not sink.data(ZOMBIE).exists(), "the thawed run left files"
    pending = [lease.pending_batch_id for lease in LeaseStore(dynamodb, f"kinesis-batch-{name}").list_leases()]
    assert pending == [None] * len(pending), "a pending marker was left"
