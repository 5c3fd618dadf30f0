"""A group whose streams read as EMR Serverless job runs, through the stand-in
(tools/devkit/emr_serverless.py): the group's run starts one job run for all of them (fifty too,
with the default settings), every stream lands exactly once, and each stream's history carries
its share of the one bill, split by the task seconds each stream's read held, the shares adding
up to what the job run was billed. A stream with nothing new hands nothing to it. A lease lost
mid-job stops that stream's read alone: the job run goes on, the others commit. A mixed group's
job run starts while its local stream reads; one left behind by a killed orchestrator is
cancelled by the next run of any of its streams."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import dynamodb_client
from kinesis_batch.parsers import default_table
from tests.crashes import start_cli
from tests.output.support import output_args, read_rows, sink_of
from tests.runs import Thief, assert_exactly_once, cli
from tests.scenarios.test_emr_serverless import wait_for
from tests.serverless.standin import ROLE, StandIn
from tests.streams import StreamFactory, put, put_kib

pytestmark = [pytest.mark.timeout(600), pytest.mark.groups]  # the heaviest group scenarios: make test-groups


def entry(stream: str, output: tuple[str, ...], job: str) -> str:
    flags = dict(zip(output[::2], output[1::2], strict=True))
    return (
        f'[[streams]]\nstream = "{stream}"\nformat = "{flags["--format"]}"\noutput = "{flags["--output"]}"\n'
        f'read_limits = "none"\nemr_serverless = {job}\n\n'
    )


def job_settings(emr: StandIn, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A fresh application and the streams file's ``emr_serverless = {...}`` of it."""
    monkeypatch.setenv("KINESIS_BATCH_EMR_SERVERLESS_POLL_SECONDS", "0.2")
    application = emr.application()
    return application, (
        f'{{application_id = "{application}", execution_role_arn = "{ROLE}", environment = "{emr.environment()}"}}'
    )


def group_file(tmp_path: Path, group: str, outputs: dict[str, tuple[str, ...]], job: str) -> Path:
    """A streams file with an entry of each of ``outputs``' streams reading as job runs of
    ``job``, and a group of them all, in that order."""
    path = tmp_path / "streams.toml"
    members = ", ".join(f'"{name}"' for name in outputs)
    entries = "".join(entry(name, output, job) for name, output in outputs.items())
    path.write_text(entries + f'[[groups]]\nname = "{group}"\nstreams = [{members}]\n')
    return path


def test_a_group_of_job_run_streams_reads_in_one_job_run_and_splits_its_bill(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    application, job = job_settings(emr_serverless, monkeypatch)
    names = [streams.create(shards=2) for _ in range(3)]
    quiet = streams.create(shards=1)  # nothing new: its read step starts nothing
    sent = {name: put(kinesis, name, 20 * (number + 1)) for number, name in enumerate(names)}
    outputs = {name: output_args("delta", "s3", tmp_path, monkeypatch) for name in [*names, quiet]}
    path = group_file(tmp_path, "jobs", outputs, job)

    ran = cli("run", "--streams-file", str(path), "--group", "jobs", "--json")

    assert ran.returncode == 0, ran.stderr[-4000:]
    (one,) = emr_serverless.job_runs(application)  # one job run for the group
    assert one["state"] == "SUCCESS" and one["tags"]["kinesis-batch:group"] == "jobs"
    report = {stream["stream"]: stream for stream in json.loads(ran.stdout)["streams"]}
    for name in names:
        rows = read_rows(sink_of(outputs[name], app=default_table(name), stream=name))
        assert_exactly_once(rows, sent[name])
    assert report[quiet]["records"] == 0 and report[quiet].get("job_run") is None
    shares = {name: report[name]["job_run"] for name in names}
    assert {share["job_run_id"] for share in shares.values()} == {one["jobRunId"]}
    assert all(share["shared_by"] == 3 for share in shares.values())
    billed = one["billedResourceUtilization"]["vCPUHour"]
    split = [share["billed"]["vcpu_hours"] for share in shares.values()]
    held = [share["task_seconds"] for share in shares.values()]
    assert sum(split) == pytest.approx(billed) and all(part > 0 for part in held)
    assert [part / billed for part in split] == pytest.approx([part / sum(held) for part in held])  # by task time
    for name in names:  # and each stream's history keeps its share with its run
        runs = cli("history", "--stream", name, "--runs", "--json")
        assert runs.returncode == 0, runs.stderr
        (run,) = json.loads(runs.stdout)
        (bill,) = run["job_runs"]
        assert bill["job_run_id"] == one["jobRunId"] and bill["vcpu_hours"] == pytest.approx(
            shares[name]["billed"]["vcpu_hours"]
        )


def test_a_lease_lost_mid_job_stops_that_streams_read_alone_and_the_others_commit(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    application, job = job_settings(emr_serverless, monkeypatch)
    slow, *small = [streams.create(shards=1) for _ in range(3)]
    put_kib(kinesis, slow, 30)  # read at 1 KiB/s: still reading when the thief strikes
    sent = {name: put(kinesis, name, 25) for name in small}
    outputs = {name: output_args("delta", "s3", tmp_path, monkeypatch) for name in [slow, *small]}
    path = tmp_path / "streams.toml"
    path.write_text(
        entry(slow, outputs[slow], job).replace('read_limits = "none"', 'read_limits = "5,1024"\nlease_seconds = 10')
        + "".join(entry(name, outputs[name], job) for name in small)
        + f'[[groups]]\nname = "jobs"\nstreams = ["{slow}", "{small[0]}", "{small[1]}"]\n'
    )
    shard = kinesis.list_shards(StreamName=slow)["Shards"][0]["ShardId"]
    running = lambda: any(one["state"] == "RUNNING" for one in emr_serverless.job_runs(application))  # noqa: E731

    with Thief(dynamodb_client(), slow, shard, ready=running) as thief:
        ran = cli("run", "--streams-file", str(path), "--group", "jobs", "--json")

    assert thief.took
    assert ran.returncode == 3, ran.stdout[-4000:]
    report = {stream["stream"]: stream for stream in json.loads(ran.stdout)["streams"]}
    assert report[slow]["exit_code"] == 3 and "lost the leases of" in report[slow]["error"], report[slow]
    (one,) = emr_serverless.job_runs(application)
    assert one["state"] == "SUCCESS", one  # the job run ran on: only the slow stream's read stopped
    for name in small:
        assert report[name]["exit_code"] == 0
        assert_exactly_once(read_rows(sink_of(outputs[name], app=default_table(name), stream=name)), sent[name])
    stopped = sink_of(outputs[slow], app=default_table(slow), stream=slow)
    assert not stopped.exists() or not read_rows(stopped).get("shard_id"), "the stopped stream published nothing"


def test_a_group_of_fifty_job_run_streams_with_default_settings_reads_in_one_job_run_each_landed_once(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    application, job = job_settings(emr_serverless, monkeypatch)
    names = [streams.create(shards=1) for _ in range(50)]
    sent = {name: put(kinesis, name, 3, keys=3) for name in names}
    outputs = {name: output_args("delta", "s3", tmp_path, monkeypatch) for name in names}
    path = group_file(tmp_path, "fifty", outputs, job)

    ran = cli("run", "--streams-file", str(path), "--group", "fifty", "--json")  # --streams-at-once: its 8

    assert ran.returncode == 0, ran.stderr[-4000:]
    (one,) = emr_serverless.job_runs(application)  # one job run, no split: 50 is within one's size
    assert one["state"] == "SUCCESS" and "job runs of" not in ran.stderr
    assert len(one["jobDriver"]["sparkSubmit"]["entryPointArguments"]) == 50
    report = {stream["stream"]: stream for stream in json.loads(ran.stdout)["streams"]}
    for name in names:
        assert_exactly_once(read_rows(sink_of(outputs[name], app=default_table(name), stream=name)), sent[name])
    shares = [report[name]["job_run"] for name in names]
    assert {share["job_run_id"] for share in shares} == {one["jobRunId"]}
    assert all(share["shared_by"] == 50 and share["task_seconds"] > 0 for share in shares)
    billed = one["billedResourceUtilization"]
    for key, field in (("vcpu_hours", "vCPUHour"), ("memory_gb_hours", "memoryGBHour")):
        assert sum(share["billed"][key] for share in shares) == pytest.approx(billed[field])


def test_a_mixed_groups_job_run_starts_while_its_local_stream_still_reads(
    emr_serverless: StandIn,
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    application, job = job_settings(emr_serverless, monkeypatch)
    local, *remote = [streams.create(shards=1) for _ in range(3)]
    put_kib(kinesis, local, 12)  # read here at 1 KiB/s: still reading when the job-run streams are ready
    sent = {name: put(kinesis, name, 10) for name in remote}
    outputs = {name: output_args("delta", "s3", tmp_path, monkeypatch) for name in [local, *remote]}
    path = tmp_path / "streams.toml"
    path.write_text(
        entry(local, outputs[local], job).replace(f"emr_serverless = {job}", 'read_limits = "5,1024"')
        .replace('read_limits = "none"\n', "")
        + "".join(entry(name, outputs[name], job) for name in remote)
        + f'[[groups]]\nname = "mixed"\nstreams = ["{local}", "{remote[0]}", "{remote[1]}"]\n'
    )  # fmt: skip

    ran = cli("run", "--streams-file", str(path), "--group", "mixed", "--streams-at-once", "1", spark=spark)

    assert ran.returncode == 0, ran.stderr[-4000:]
    (one,) = emr_serverless.job_runs(application)
    for name in remote:
        assert_exactly_once(read_rows(sink_of(outputs[name], app=default_table(name), stream=name)), sent[name])
    runs = cli("history", "--stream", local, "--runs", "--json")
    (local_run,) = json.loads(runs.stdout)
    assert local_run["records"] == 12 and local_run.get("job_runs") is None  # read here
    committed = datetime.fromisoformat(local_run["committed_at"])
    assert one["createdAt"] < committed, "the job run started only once the local stream had ended"


def test_a_group_larger_than_a_job_run_takes_is_split_evenly_and_says_so(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    application, job = job_settings(emr_serverless, monkeypatch)
    names = [streams.create(shards=1) for _ in range(3)]
    sent = {name: put(kinesis, name, 5) for name in names}
    outputs = {name: output_args("delta", "s3", tmp_path, monkeypatch) for name in names}
    path = group_file(tmp_path, "g", outputs, job)

    ran = cli("run", "--streams-file", str(path), "--group", "g", "--streams-per-job-run", "2", "--json")

    assert ran.returncode == 0, ran.stderr[-4000:]
    said = f"group g: 3 streams' reads on application {application} in 2 job runs of 2, 1 (at most 2 a job run)"
    assert said in ran.stderr.splitlines()
    jobs = emr_serverless.job_runs(application)
    assert sorted(len(one["jobDriver"]["sparkSubmit"]["entryPointArguments"]) for one in jobs) == [1, 2]
    assert all(one["state"] == "SUCCESS" for one in jobs)
    report = {stream["stream"]: stream for stream in json.loads(ran.stdout)["streams"]}
    for name in names:
        assert_exactly_once(read_rows(sink_of(outputs[name], app=default_table(name), stream=name)), sent[name])
    for one in jobs:  # each job run's bill split across its own streams
        shares = [r["job_run"] for r in report.values() if r["job_run"]["job_run_id"] == one["jobRunId"]]
        total = sum(share["billed"]["vcpu_hours"] for share in shares)
        assert total == pytest.approx(one["billedResourceUtilization"]["vCPUHour"])


@pytest.mark.isolated("kill -9")
def test_a_group_job_run_left_by_a_killed_orchestrator_is_cancelled_by_the_next_run_of_any_member(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    application, job = job_settings(emr_serverless, monkeypatch)
    emr_serverless.behave(application, queued_seconds=600)  # the group's job run waits, active, for its end
    names = [streams.create(shards=1) for _ in range(3)]
    sent = {name: put(kinesis, name, 10) for name in names}
    outputs = {name: output_args("delta", "s3", tmp_path, monkeypatch) for name in names}
    path = group_file(tmp_path, "jobs", outputs, job)
    crashed = start_cli("run", "--streams-file", str(path), "--group", "jobs")
    try:
        wait_for(lambda: bool(emr_serverless.job_runs(application)))
    finally:
        os.killpg(crashed.pid, signal.SIGKILL)
        crashed.communicate()
    (orphan,) = emr_serverless.job_runs(application)
    last_spec = orphan["jobDriver"]["sparkSubmit"]["entryPointArguments"][-1]
    (member,) = [name for name in names if last_spec.startswith(bucket_of(outputs[name]))]  # any but the first
    lapse_leases(default_table(member))  # as lease_seconds after the crash: nobody renews them
    emr_serverless.behave(application, queued_seconds=0)
    alone = tmp_path / "alone.toml"
    alone.write_text(entry(member, outputs[member], job) + f'[[groups]]\nname = "alone"\nstreams = ["{member}"]\n')

    ran = cli("run", "--streams-file", str(alone), "--group", "alone")

    assert ran.returncode == 0, ran.stderr[-4000:]
    assert f"cancelling job run {orphan['jobRunId']}" in ran.stderr
    jobs = {one["jobRunId"]: one for one in emr_serverless.job_runs(application)}
    assert jobs.pop(orphan["jobRunId"])["state"] == "CANCELLED"
    assert [one["state"] for one in jobs.values()] == ["SUCCESS"]
    assert_exactly_once(read_rows(sink_of(outputs[member], app=default_table(member), stream=member)), sent[member])


def bucket_of(output: tuple[str, ...]) -> str:
    """``s3://BUCKET/`` of an output's --output."""
    flags = dict(zip(output[::2], output[1::2], strict=True))
    return "/".join(flags["--output"].split("/")[:3]) + "/"


def lapse_leases(table: str) -> None:
    """Every lease of ``table`` as its owner's lease time after its last renewal: expired."""
    client = dynamodb_client()
    past = str(int(time.time() * 1000) - 1)
    for item in client.scan(TableName=table)["Items"]:
        if "leaseExpiresAt" in item:
            client.update_item(
                TableName=table,
                Key={"leaseKey": item["leaseKey"]},
                UpdateExpression="SET leaseExpiresAt = :past",
                ExpressionAttributeValues={":past": {"N": past}},
            )
