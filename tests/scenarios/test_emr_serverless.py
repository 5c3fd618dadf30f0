"""The read step as an EMR Serverless job run, through the stand-in (tools/devkit/emr_serverless.py):
the job runs spark-submit here on a bare Python that gets kinesis-batch from the environment
archive alone, writing the batch into the output's staging on moto's S3, while the orchestrating
process holds and renews the leases, judges what the job left, publishes and commits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from kinesis_batch import LeaseManager, LeaseStore
from kinesis_batch.aws import dynamodb_client
from kinesis_batch.parsers import default_table
from tests.output.support import make_bucket, output_args, read_rows, sink_of
from tests.runs import REPO, Thief, assert_exactly_once, assert_per_key_order, cli, diamond_stream
from tests.serverless.standin import ARCH, PYTHON, ROLE, StandIn
from tests.streams import StreamFactory, put_kib

pytestmark = pytest.mark.timeout(600)


def job_args(application: str, environment: str) -> tuple[str, ...]:
    return ("--emr-serverless-application", application, "--execution-role", ROLE, "--environment", environment)


def run_args(
    emr: StandIn, application: str, stream: str, output: tuple[str, ...], *more: str, runs: bool = True
) -> tuple[str, ...]:
    """``kinesis-batch run`` of ``stream`` into ``output`` as a job run (the archive uploaded anew;
    ``runs`` False: only its name, for a job run that runs nothing)."""
    return ("run", "--stream", stream, *output, *more, *job_args(application, emr.environment(runs=runs)))


def running(emr: StandIn, application: str) -> Callable[[], bool]:
    return lambda: any(job["state"] == "RUNNING" for job in emr.job_runs(application))


def wait_for(ready: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, "never became ready"
        time.sleep(0.2)


def billed_runs(stream: str) -> list[dict[str, Any]]:
    """``history --runs --json``: every run, with the job runs billed to it."""
    runs = cli("history", "--stream", stream, "--runs", "--json")
    assert runs.returncode == 0, runs.stderr
    listed: list[dict[str, Any]] = json.loads(runs.stdout)
    return listed


def bill_of(runs: list[dict[str, Any]], job: dict[str, Any]) -> tuple[bool, str, float]:
    """Whether the run billed for ``job`` committed, the job's state and vCPU-hours, as the history says."""
    ((committed, billed),) = [
        (run["committed"], bill)
        for run in runs
        for bill in run.get("job_runs", [])
        if bill["job_run_id"] == job["jobRunId"]
    ]
    return committed, billed["state"], billed["vcpu_hours"]


def checkpoints(stream: str) -> dict[str, str]:
    store = LeaseStore(dynamodb_client(), default_table(stream))
    return {lease.lease_key: str(lease.checkpoint) for lease in store.list_leases()}


def test_a_cli_run_queued_past_the_providers_25_polls_reads_a_resharded_stream_into_delta_exactly_once(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 40)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    application = emr_serverless.application()
    emr_serverless.behave(application, queued_polls=30)  # past the provider's 25, however slow the machine
    monkeypatch.setenv("KINESIS_BATCH_EMR_SERVERLESS_POLL_SECONDS", "0.05")

    ran = cli(*run_args(emr_serverless, application, name, output, "--read-limits", "none", "--metrics", "emf"))

    assert ran.returncode == 0, ran.stderr[-3000:]
    rows = read_rows(sink_of(output, app=default_table(name), stream=name))
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
    (job,) = emr_serverless.job_runs(application)
    billed = job["billedResourceUtilization"]
    (emf,) = [json.loads(line) for line in ran.stderr.splitlines() if line.startswith("{")]
    assert emf["BilledVCPUHours"] == billed["vCPUHour"]  # the run's metrics carry its bill
    runs = cli("history", "--stream", name, "--runs")  # and the history keeps it with the run
    assert f"EMR Serverless job run {job['jobRunId']}: {billed['vCPUHour']:.3f} vCPU-hours" in runs.stdout, runs
    assert job["state"] == "SUCCESS"
    assert job["name"].startswith(f"kinesis-batch/{default_table(name)}/")
    assert job["tags"]["kinesis-batch:stream"] == name
    assert job["billedResourceUtilization"]["vCPUHour"] > 0
    assert f"job run {job['jobRunId']}: QUEUED" in ran.stderr and f"job run {job['jobRunId']}: RUNNING" in ran.stderr
    # The Amazon provider's operator gives up after waiter_max_attempts (25) polls; the run waits on.
    assert emr_serverless.polls(job["jobRunId"])["QUEUED"] == 30
    assert "vCPU-hours" in ran.stderr


def test_a_lease_lost_mid_job_cancels_the_job_run_publishes_nothing_and_the_next_run_lands_everything_once(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=1)
    # 30 KiB read at 1 KiB/s: the job is still reading when the thief strikes.
    sent = put_kib(kinesis, name, 30)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    application = emr_serverless.application()
    args = run_args(emr_serverless, application, name, output, "--lease-seconds", "10")
    shard = kinesis.list_shards(StreamName=name)["Shards"][0]["ShardId"]

    with Thief(dynamodb_client(), name, shard, ready=running(emr_serverless, application)) as thief:
        lost = cli(*args, "--read-limits", "5,1024")

    assert thief.took
    assert lost.returncode == 3, lost.stderr[-3000:]
    (line,) = lost.stderr.strip().splitlines()[-1:]
    assert line.startswith("kinesis-batch: error: lost the leases of") and "thief" in line, line
    (job,) = emr_serverless.job_runs(application)
    assert job["state"] == "CANCELLED"
    sink = sink_of(output, app=default_table(name), stream=name)
    assert read_rows(sink) == {}, "nothing may be published"

    thief_manager = LeaseManager(LeaseStore(dynamodb_client(), default_table(name)), "thief", 60)
    thief_manager.adopt()
    thief_manager.release()  # the other worker is done: its shard is free again
    ran = cli(*args, "--read-limits", "none")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert_exactly_once(read_rows(sink), sent)
    # Both job runs are in the history with their bills: the cancelled one's run committed nothing.
    runs, jobs = billed_runs(name), emr_serverless.job_runs(application)
    assert bill_of(runs, job) == (False, "CANCELLED", job["billedResourceUtilization"]["vCPUHour"])
    (read,) = [j for j in jobs if j["jobRunId"] != job["jobRunId"]]
    assert bill_of(runs, read) == (True, "SUCCESS", read["billedResourceUtilization"]["vCPUHour"])


def start_cli(*args: str) -> subprocess.Popen[str]:
    """``kinesis-batch`` in a process group of its own, its output kept."""
    return subprocess.Popen(
        [sys.executable, "-m", "kinesis_batch.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=REPO,
    )


@pytest.mark.isolated("kill -9")
def test_after_a_kill_9_of_the_orchestrator_the_next_run_cancels_the_job_run_left_behind_and_lands_once(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=1)
    sent = put_kib(kinesis, name, 60)  # 60 s at 1 KiB/s: the job outlives its orchestrator's leases
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    application = emr_serverless.application()
    args = run_args(emr_serverless, application, name, output, "--lease-seconds", "10")

    crashed = start_cli(*args, "--read-limits", "5,1024")
    wait_for(running(emr_serverless, application))
    os.killpg(crashed.pid, signal.SIGKILL)
    crashed.communicate()
    (orphan,) = emr_serverless.job_runs(application)
    time.sleep(11)  # the dead orchestrator's leases lapse; its job run reads on

    ran = cli(*args, "--read-limits", "none")

    assert ran.returncode == 0, ran.stderr[-3000:]
    assert f"cancelling job run {orphan['jobRunId']}" in ran.stderr
    jobs = {job["jobRunId"]: job for job in emr_serverless.job_runs(application)}
    assert jobs.pop(orphan["jobRunId"])["state"] == "CANCELLED"
    assert [job["state"] for job in jobs.values()] == ["SUCCESS"]
    assert_exactly_once(read_rows(sink_of(output, app=default_table(name), stream=name)), sent)
    # The orphan's bill was kept by the run that cancelled it, under the dead run's batch.
    assert bill_of(billed_runs(name), orphan)[:2] == (False, "CANCELLED")


@pytest.mark.isolated("a signal")
def test_sigterm_of_the_cli_cancels_the_job_run_and_releases_the_leases(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=1)
    put_kib(kinesis, name, 60)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    application = emr_serverless.application()
    run = start_cli(*run_args(emr_serverless, application, name, output, "--read-limits", "5,1024"))
    wait_for(running(emr_serverless, application))

    os.kill(run.pid, signal.SIGTERM)
    _, stderr = run.communicate(timeout=120)

    assert run.returncode == 143, stderr[-3000:]
    (job,) = emr_serverless.job_runs(application)
    assert job["state"] == "CANCELLED"
    assert read_rows(sink_of(output, app=default_table(name), stream=name)) == {}
    store = LeaseStore(dynamodb_client(), default_table(name))
    assert [lease.lease_owner for lease in store.list_leases()] == [None]
    assert bill_of(billed_runs(name), job) == (False, "CANCELLED", job["billedResourceUtilization"]["vCPUHour"])


def test_a_job_run_that_says_success_without_running_fails_the_run_in_one_line_and_moves_nothing(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=3)
    diamond_stream(kinesis, name, 10)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    application = emr_serverless.application()
    emr_serverless.behave(application, lie=True)

    ran = cli(*run_args(emr_serverless, application, name, output, "--read-limits", "none", runs=False))

    assert ran.returncode == 4, ran.stderr[-3000:]
    (line,) = ran.stderr.strip().splitlines()[-1:]
    assert "says SUCCESS but left no result for this attempt" in line and "nothing was published" in line, line
    assert read_rows(sink_of(output, app=default_table(name), stream=name)) == {}
    assert set(checkpoints(name).values()) == {"TRIM_HORIZON"}
    (job,) = emr_serverless.job_runs(application)
    assert bill_of(billed_runs(name), job)[:2] == (False, "SUCCESS")  # billed, though it ran nothing


def test_an_hour_with_nothing_new_starts_no_job_run_and_every_billed_one_is_in_the_history(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=2)
    sent = put_kib(kinesis, name, 20)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    application = emr_serverless.application()
    args = run_args(emr_serverless, application, name, output, "--read-limits", "none")
    first = cli(*args)
    assert first.returncode == 0, first.stderr[-3000:]

    quiet = cli(*args)

    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert "read: nothing new on 2 shards since their checkpoints; no read started" in quiet.stderr
    (job,) = emr_serverless.job_runs(application)  # the first run's only
    assert_exactly_once(read_rows(sink_of(output, app=default_table(name), stream=name)), sent)
    runs = billed_runs(name)
    assert [run["committed"] for run in runs] == [True]  # the quiet run committed and cost nothing
    assert bill_of(runs, job) == (True, "SUCCESS", job["billedResourceUtilization"]["vCPUHour"])


def test_the_archive_package_uploads_to_s3_is_the_one_a_job_run_reads_a_resharded_stream_with(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented first step, as a user takes it: ``package --output s3://…`` writes the
    archive (once gzipped: a name ending in .gz is never compressed again on the way), and the
    job run of the next ``run`` unpacks that very object on a bare Python."""
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 30)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    prefix = f"s3://{make_bucket()}/kinesis-batch"
    packaged = cli("package", "--python", PYTHON, "--arch", ARCH, "--output", prefix, "--json")
    assert packaged.returncode == 0, packaged.stderr[-3000:]
    archive = json.loads(packaged.stdout)["archive"]
    assert archive == f"{prefix}/{emr_serverless.archive.name}"
    bucket, key = archive.removeprefix("s3://").split("/", 1)
    stored = tmp_path / "stored.tar.gz"
    boto3.client("s3").download_file(bucket, key, str(stored))
    with tarfile.open(stored) as unpacked:  # a gzipped tar, not a gzip of one
        assert "kinesis_batch/cli/read_step.py" in unpacked.getnames()

    application = emr_serverless.application()
    ran = cli("run", "--stream", name, *output, "--read-limits", "none", *job_args(application, archive))

    assert ran.returncode == 0, ran.stderr[-3000:]
    assert_exactly_once(read_rows(sink_of(output, app=default_table(name), stream=name)), sent)
    (job,) = emr_serverless.job_runs(application)
    assert job["state"] == "SUCCESS"
    assert f"{archive}#environment" in json.dumps(job["configurationOverrides"]), "it unpacked the uploaded object"
    again = cli("package", "--python", PYTHON, "--arch", ARCH, "--output", prefix)
    assert again.returncode == 2 and again.stderr.strip().endswith("--replace writes it again"), again.stderr
