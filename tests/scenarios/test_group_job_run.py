"""A group whose streams read as EMR Serverless job runs, through the stand-in
(tools/devkit/emr_serverless.py): the group's run starts one job run for all of them, every
stream lands exactly once, and each stream's history carries its share of the one bill, the
shares adding up to what the job run was billed. A stream with nothing new hands nothing to it.
A lease lost mid-job stops that stream's read alone: the job run goes on, the others commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import dynamodb_client
from kinesis_batch.parsers import default_table
from tests.output.support import output_args, read_rows, sink_of
from tests.runs import Thief, assert_exactly_once, cli
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


def test_a_group_of_job_run_streams_reads_in_one_job_run_and_splits_its_bill(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    application, job = job_settings(emr_serverless, monkeypatch)
    names = [streams.create(shards=2) for _ in range(3)]
    quiet = streams.create(shards=1)  # nothing new: its read step starts nothing
    sent = {name: put(kinesis, name, 20 * (number + 1)) for number, name in enumerate(names)}
    outputs = {name: output_args("delta", "s3", tmp_path, monkeypatch) for name in [*names, quiet]}
    path = tmp_path / "streams.toml"
    members = ", ".join(f'"{name}"' for name in [*names, quiet])
    path.write_text(
        "".join(entry(name, outputs[name], job) for name in [*names, quiet])
        + f'[[groups]]\nname = "jobs"\nstreams = [{members}]\n'
    )

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
    assert sum(split) == pytest.approx(billed) and all(part > 0 for part in split)
    assert split == sorted(split), "split by the bytes each stream read: 20, 40, 60 records"
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
