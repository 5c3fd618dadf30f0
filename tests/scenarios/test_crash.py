"""Crash safety, for every output format: kill -9 the whole run (CLI, Spark's JVM, Python workers)
at each step; later runs by another worker converge to exactly-once output, read back with the
format's own reader. And two runs started at the same moment on one output.

The crashing runs are real ``kinesis-batch run`` processes, killed with -9; those of one format
run side by side, each on a stream and an output of its own. The runs after a crash are in this
process, on the session's shared Spark, as another worker whose clock is past the dead worker's
lease expiry: what a worker sees once the leases expired, without waiting for it.

The two runs started at once each hold one shard's lease beforehand (so both have a batch) and
stop themselves right before publishing until both are there: their commits to the one output
meet, and each format's conflict handling has to keep the output exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import LeaseLostError
from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.config import RunConfig
from kinesis_batch.output import CommitRecord, Sink
from kinesis_batch.output.parquet import ParquetSink
from kinesis_batch.parsers import default_table
from kinesis_batch.planning import plan_from_json, shard_commit
from kinesis_batch.run import CatchUpRun, RunReport
from kinesis_batch.storage.staged import StagedFile, read_results, staged_files
from tests.crashes import (
    CRASHED,
    LEASE_SECONDS,
    SUBPROCESS_ARGS,
    after_expiry,
    died_at,
    each_converges,
    killed_at_exit,
    lease_owners,
    pending_batches,
    start_cli,
    start_crashing,
    stopped,
)
from tests.matrices import RUN_CRASH
from tests.output.support import output_args, read_rows, run_config, sink_of
from tests.runs import assert_exactly_once, assert_per_key_order, diamond_stream
from tests.streams import StreamFactory

pytestmark = pytest.mark.isolated("kill -9")

#: (format, where, steps): every pair of step, format and place (tests.matrices.RUN_CRASH), the
#: steps of one format and place side by side in one test.
CRASH_KINDS = [(format, where, steps) for (format, where), steps in RUN_CRASH.by("format", "where")]
TWO_RUN_KINDS = [("parquet", "local"), ("delta", "s3"), ("iceberg", "local")]


#: The runs started as processes: one task slot, and a JVM that starts about twice as fast
#: (no C2 compiler, serial GC). What they do is the same; they only get there sooner.
def config_of(stream: str, output: tuple[str, ...], worker_id: str, lease_seconds: float = LEASE_SECONDS) -> RunConfig:
    """The crash tests' runs, unpaced on the emulator."""
    return run_config(stream, output, worker_id, lease_seconds=lease_seconds, read_limits="none")


def catch_up(
    spark: Any, stream: str, output: tuple[str, ...], worker_id: str, clock: Callable[[], float] = time.time
) -> RunReport:
    """``kinesis-batch run`` in this process, on the shared Spark, as ``worker_id`` with ``clock``."""
    config = config_of(stream, output, worker_id)
    run = CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark, clock=clock)
    return run.run()


def published_batches(sink: Sink, rows: dict[str, list[Any]]) -> set[str]:
    """The batches in the output: our distinct batch ids in the rows (and, for parquet, its folders)."""
    in_rows = {str(batch) for batch in rows.get("batch_id", [])}
    if isinstance(sink, ParquetSink):
        assert set(sink.published_batches()) == in_rows, "a published batch folder without rows"
    return in_rows


@dataclass
class Crash:
    """One crashing run: its step, its stream (and what was put in it), its output."""

    step: str
    stream: str
    sent: list[str]
    output: tuple[str, ...]
    sink: Sink
    process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        self.process = start_crashing(self.stream, self.output, self.step)
        return self.process


def what_the_dead_run_would_publish(crash: Crash) -> tuple[CommitRecord, list[StagedFile]]:
    """The record and files of the crashed batch, as the run's publish step builds them (the
    run's read step had finished): what a late publish by a run thought dead would commit."""
    sink = crash.sink
    plan = plan_from_json(sink.read_manifest(CRASHED) or {})
    results = read_results(sink.results(CRASHED))
    commits = [shard_commit(r, results[r.shard_id]) for r in plan.ranges if r.shard_id in results]
    shards = tuple(commit for commit in commits if commit is not None)
    files = staged_files(sink.results(CRASHED))
    assert shards and files, "the read step had finished: the batch is staged"
    return CommitRecord(CRASHED, CRASHED, crash.stream, datetime.now(UTC), shards), files


def converges_after(crash: Crash, spark: Any) -> None:
    """The crashed run died whole and published at most its batch; another worker's recovery
    and one more run give exactly-once output and leave nothing pending, staged or held."""
    step, name, sink = crash.step, crash.stream, crash.sink
    died_at(crash.process, crash.step)  # no process of it outlives it: the next runs start at once
    if step in ("reading", "read", "staged"):
        assert read_rows(sink) == {}, "nothing may be visible before publish"
    if step != "committed":
        assert set(pending_batches(name).values()) == {CRASHED}, "the crashed run left its batch pending on the leases"
    late = what_the_dead_run_would_publish(crash) if step in ("read", "staged") else None

    # Another worker, once the dead worker's leases expired: it settles the batch and reads the rest.
    recovery = catch_up(spark, name, crash.output, "recoverer", clock=after_expiry)
    outcomes = set(recovery.recovered.values())
    if step == "published":  # shards with nothing new were not in the batch: only their marker is cleared
        assert "rolled forward" in outcomes and outcomes <= {"rolled forward", "cleared"}
    elif step != "committed":
        assert outcomes == {"discarded"}
    if late is not None:  # the recovery fenced the batch off: the run, had it not been dead, could not publish it
        with pytest.raises(LeaseLostError):
            sink.publish(*late)

    rows = read_rows(sink)
    assert_exactly_once(rows, crash.sent)
    assert_per_key_order(rows)
    assert pending_batches(name) == {}
    assert "recoverer" not in lease_owners(name).values(), "a lease left held"
    for batch in (CRASHED, recovery.batch_id):
        assert not sink.staging(batch).exists(), f"the staging of batch {batch} was left behind"
    if step not in ("published", "committed"):
        assert not sink.data(CRASHED).exists(), "the discarded batch's files were left behind"
    if isinstance(sink, ParquetSink):
        staging = sink.root / "_staging"
        assert not staging.exists() or not any(staging.iterdir()), "a staged batch was left behind"
    crashed = {CRASHED} if step in ("published", "committed") else set()
    assert published_batches(sink, rows) == crashed | ({recovery.batch_id} if recovery.published else set())


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("format", "where", "steps"), CRASH_KINDS, ids=[f"{f}-{w}" for f, w, _ in CRASH_KINDS])
def test_kill_9_at_any_step_then_another_worker_converges_to_exactly_once(
    format: str,
    where: str,
    steps: tuple[str, ...],
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    subtests: pytest.Subtests,
) -> None:
    crashes = []
    for step in steps:
        name = streams.create(shards=3)
        sent = diamond_stream(kinesis, name, 60)
        output = output_args(format, where, tmp_path, monkeypatch)  # iceberg: its catalog in os.environ
        crashes.append(Crash(step, name, sent, output, sink_of(output, app=default_table(name), stream=name)))
    each_converges(crashes, lambda crash: converges_after(crash, spark), subtests)


def hold_one_shard_each(spark: Any, stream: str, output: tuple[str, ...], workers: tuple[str, str]) -> None:
    """Give each worker the lease of one first-generation shard, as a worker holds it when a run
    of its own died with the lease still live. Left alone, whichever run starts first takes every
    lease and the other publishes nothing; this way both publish into the one output. The other
    shards are raced for."""
    for worker, shard_id in zip(workers, ["shardId-000000000000", "shardId-000000000001"], strict=True):
        config = config_of(stream, output, worker, lease_seconds=300)  # the runs' own (the default)
        run = CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark)
        run.checkpoints.create_checkpoint_store_if_not_exists()
        run.manager.ensure_leases(run.plan().new_leases)
        assert [lease.lease_key for lease in run.manager.take([shard_id]).acquired] == [shard_id]


@pytest.mark.parametrize(
    ("format", "where"), TWO_RUN_KINDS, ids=[f"{format}-{where}" for format, where in TWO_RUN_KINDS]
)
def test_two_runs_started_at_the_same_moment_never_read_a_shard_twice(
    format: str,
    where: str,
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 60)
    output = output_args(format, where, tmp_path, monkeypatch)
    sink = sink_of(output, app=default_table(name), stream=name)
    run = ("run", "--stream", name, *output, *SUBPROCESS_ARGS, "--json")
    hold_one_shard_each(spark, name, output, ("one", "two"))

    # Each run stops itself right before its publish; both go on at the same moment, so their
    # check-then-commits on the one table overlap (without this they land seconds apart).
    runs = [start_cli(*run, "--worker-id", worker, fault=("freeze", "staged")) for worker in ("one", "two")]
    reports = []
    with killed_at_exit(runs):
        at_publish = [stopped(process) for process in runs]
        for process, frozen in zip(runs, at_publish, strict=True):
            if frozen:
                os.kill(process.pid, signal.SIGCONT)
        for process in runs:
            stdout, stderr = process.communicate(timeout=300)
            assert process.returncode == 0, stderr[-2000:]
            reports.append(json.loads(stdout))
    assert all(at_publish), "each run has a batch to publish"
    read_by = [{s["shard_id"] for s in r["shards"]} for r in reports]
    assert not read_by[0] & read_by[1], f"shards read by both runs: {read_by[0] & read_by[1]}"
    assert all(r["published"] for r in reports), "both runs publish into the one output"

    published = {r["batch_id"] for r in reports}
    for _ in range(5):  # later runs pick up children whose parents the other run finished
        report = catch_up(spark, name, output, "later")
        if not report.published:
            break
        published.add(report.batch_id)
    else:
        pytest.fail("runs kept publishing")
    rows = read_rows(sink)
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
    assert published_batches(sink, rows) == published


def test_a_task_killed_mid_group_is_retried_whole_and_the_output_is_exactly_once(
    kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 60)
    output = tmp_path / "out"
    # One task slot, so one task reads the whole history; Spark may try a task twice (local[1,2]).
    # Its first attempt kills its own Python worker once one shard's rows are written and the
    # other shards are mid-read.
    run = start_cli(
        "run", "--stream", name, "--output", str(output), "--spark-master", "local[1,2]", "--read-limits", "none",
        "--json", fault=("crash", "task"),
    )  # fmt: skip
    with killed_at_exit([run]):
        stdout, stderr = run.communicate(timeout=240)

    assert run.returncode == 0, stderr[-3000:]
    report = json.loads(stdout)
    assert (report["tasks"], report["failed_task_attempts"]) == (1, 1), report
    assert report["published"] and report["records"] == len(sent)
    rows = read_rows(ParquetSink(output))
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
    assert sorted(p.name for p in output.rglob("*.parquet") if p.name.startswith(".")) == [], "a killed attempt's file"
