"""Thirty single-stream runs started in the same second, as thirty hourly DAGs do, against the
account's control-plane limits (the limits proxy: AWS's figures) and endpoints that drop
connections: every run exits 0, each made its control-plane calls once, and the proxies count
the throttles and drops they rode out. The streams are quiet, as most of a fleet's are in a
given hour: the runs also prove that an hour with nothing new starts no read (no JVM here).

At fleet size (``make test-groups``): against the account's DescribeStreamSummary limit scaled
down to 1 call a second, with every 7th control-plane connection dropped, twenty single runs at
once all exit 0, and three groups of four streams at once all exit 0 and land every stream
once, each stream's report and history saying what the control plane made it wait."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from devkit.limits_proxy import ACCOUNT, ControlLimits, LimitsProxy, Rate

from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.leases.store import LeaseStore
from tests.output.support import output_args
from tests.runs import REPO, assert_exactly_once, cli
from tests.scenarios.test_group_run import entry, rows_of, streams_file
from tests.streams import StreamFactory, put

pytestmark = pytest.mark.isolated("thirty runs at once, as thirty hosts")

RUNS = 30
#: Each process imports the package, says it is ready, then waits for the word to go: the runs
#: start together however long thirty imports take on two cores.
LAUNCHER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from kinesis_batch.cli import main
    ready, go = Path(sys.argv[1]), Path(sys.argv[2])
    ready.touch()
    while not go.exists():
        time.sleep(0.01)
    sys.exit(main(sys.argv[3:]))
    """
)


def start_together(commands: list[list[str]], tmp_path: Path, env: dict[str, str]) -> list[subprocess.Popen[str]]:
    go = tmp_path / "go"
    launched = []
    for index, argv in enumerate(commands):
        ready = tmp_path / f"ready-{index}"
        launched.append(
            subprocess.Popen(
                [sys.executable, "-c", LAUNCHER, str(ready), str(go), *argv],
                env=env,
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        )
    deadline = time.monotonic() + 300
    while sum((tmp_path / f"ready-{i}").exists() for i in range(len(commands))) < len(commands):
        assert time.monotonic() < deadline, "the runs did not all start"
        assert all(p.poll() is None for p in launched), "a run ended before it was told to go"
        time.sleep(0.05)
    go.touch()
    return launched


def ended(launched: list[subprocess.Popen[str]], timeout: float = 600) -> list[tuple[int, str, str]]:
    """Each run's exit code, stdout and stderr, once all ended."""
    try:
        outputs = [p.communicate(timeout=timeout) for p in launched]
        return [(p.returncode, out, err) for p, (out, err) in zip(launched, outputs, strict=True)]
    finally:
        for process in launched:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)


def test_thirty_runs_started_in_the_same_second_all_succeed_within_the_accounts_limits(
    proxies: tuple[LimitsProxy, LimitsProxy], streams: StreamFactory, tmp_path: Path
) -> None:
    kinesis, dynamodb = proxies
    names = [streams.create(shards=1) for _ in range(RUNS)]
    kinesis.gather("DescribeStreamSummary", RUNS)  # the first call of each run, all in one instant
    kinesis.drop("DescribeStreamSummary", 2)
    kinesis.drop("ListShards", 2)
    kinesis.drop("GetRecords", 2)
    dynamodb.drop("CreateTable", 2)
    dynamodb.drop("DescribeTable", 2)
    env = {**os.environ, "AWS_ENDPOINT_URL_KINESIS": kinesis.url, "AWS_ENDPOINT_URL_DYNAMODB": dynamodb.url}
    commands = [["run", "--stream", name, "--output", str(tmp_path / name)] for name in names]

    done = ended(start_together(commands, tmp_path, env), timeout=300)

    for code, stdout, stderr in done:
        assert code == 0, stderr
        assert "read: nothing new on 1 shards since their checkpoints; no read started" in stderr
        assert "spark" not in stderr.lower()  # no JVM for a quiet hour
        assert "nothing new to publish" in stdout + stderr, stdout + stderr
    print(f"\nthrottled: {kinesis.throttles}; dropped: {kinesis.dropped}, {dynamodb.dropped}")

    # 30 calls in one second against 20 a second for the account: 10 at least were refused.
    assert kinesis.throttles["DescribeStreamSummary"] >= RUNS - 20
    assert kinesis.dropped == {"DescribeStreamSummary": 2, "ListShards": 2, "GetRecords": 2}
    assert dynamodb.dropped == {"CreateTable": 2, "DescribeTable": 2}
    # Once per run: every answered call beyond one a run was a throttled one.
    for operation in ("DescribeStreamSummary", "ListShards", "GetShardIterator", "GetRecords"):
        answered = kinesis.calls[operation] - kinesis.throttles.get(operation, 0)
        assert answered == RUNS, (operation, kinesis.calls, kinesis.throttles)
    # Each stream's lease table holds its shard, at the stream's start: nothing was skipped.
    client = dynamodb_client()
    for name in names:
        (lease,) = LeaseStore(client, f"kinesis-batch-{name}").list_leases()
        assert lease.checkpoint.sentinel is not None and lease.lease_owner is None


GROUPS, MEMBERS = 3, 4
SINGLES = 20


def scaled_down(kinesis: LimitsProxy, dynamodb: LimitsProxy) -> None:
    """The account's DescribeStreamSummary limit scaled down to 1 call a second (AWS: 20 a
    second, so 12 streams here stand for 240), every 7th control-plane connection dropped."""
    limits = dict(ControlLimits().rates) | {"DescribeStreamSummary": Rate(1, ACCOUNT)}
    kinesis.control = ControlLimits(tuple(limits.items()))
    kinesis.drop_every(7, frozenset({"DescribeStreamSummary", "ListShards", "DescribeStream"}))
    dynamodb.drop_every(7, frozenset({"CreateTable", "DescribeTable"}))


@pytest.mark.groups
def test_twenty_single_runs_at_once_behind_one_call_a_second_all_succeed(
    proxies: tuple[LimitsProxy, LimitsProxy], streams: StreamFactory, tmp_path: Path
) -> None:
    kinesis, dynamodb = proxies
    scaled_down(kinesis, dynamodb)
    names = [streams.create(shards=1) for _ in range(SINGLES)]
    env = {**os.environ, "AWS_ENDPOINT_URL_KINESIS": kinesis.url, "AWS_ENDPOINT_URL_DYNAMODB": dynamodb.url}
    commands = [["run", "--stream", name, "--output", str(tmp_path / name)] for name in names]

    done = ended(start_together(commands, tmp_path, env))

    for (code, _, stderr), name in zip(done, names, strict=True):
        assert code == 0, stderr[-3000:]
        assert "nothing new on 1 shards since their checkpoints" in stderr, (name, stderr[-3000:])
    print(f"\ncalls: {kinesis.calls}; throttled: {kinesis.throttles}; dropped: {kinesis.dropped}, {dynamodb.dropped}")
    assert kinesis.throttles["DescribeStreamSummary"] > 0 and sum(kinesis.dropped.values()) > 0
    answered = kinesis.calls["DescribeStreamSummary"] - kinesis.throttles["DescribeStreamSummary"]
    assert answered == SINGLES, "each run asked once"
    client = dynamodb_client()
    for name in names:  # each stream's lease holds its shard at the stream's start: nothing skipped
        (lease,) = LeaseStore(client, f"kinesis-batch-{name}").list_leases()
        assert lease.checkpoint.sentinel is not None and lease.lease_owner is None


@pytest.mark.groups
def test_three_groups_of_four_at_once_behind_one_call_a_second_all_land_every_stream_once(
    proxies: tuple[LimitsProxy, LimitsProxy], streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinesis, dynamodb = proxies
    scaled_down(kinesis, dynamodb)
    client = kinesis_client()
    members: list[tuple[str, tuple[str, ...], list[str]]] = []
    commands = []
    for group in range(GROUPS):
        entries, names = [], []
        for _ in range(MEMBERS):
            name = streams.create(shards=1)
            output = output_args("parquet", "local", tmp_path, monkeypatch)
            members.append((name, output, put(client, name, 5)))
            entries.append(entry(name, output, read_limits="none"))
            names.append(name)
        path = streams_file(tmp_path / f"group-{group}.toml", entries, names)
        commands.append(["run", "--streams-file", str(path), "--group", "g", "--spark-master", "local[1]"])
    env = {**os.environ, "AWS_ENDPOINT_URL_KINESIS": kinesis.url, "AWS_ENDPOINT_URL_DYNAMODB": dynamodb.url}

    done = ended(start_together(commands, tmp_path, env))

    print(f"\ncalls: {kinesis.calls}; throttled: {kinesis.throttles}; dropped: {kinesis.dropped}, {dynamodb.dropped}")
    for code, _, stderr in done:
        assert code == 0, stderr[-3000:]
    for name, output, sent in members:
        assert_exactly_once(rows_of(name, output), sent)
    assert kinesis.throttles["DescribeStreamSummary"] > 0 and sum(kinesis.dropped.values()) > 0
    # Each stream asked DescribeStreamSummary once: every call beyond was refused or dropped.
    answered = kinesis.calls["DescribeStreamSummary"] - kinesis.throttles["DescribeStreamSummary"]
    assert answered == GROUPS * MEMBERS
    said = [line for _, stdout, _ in done for line in stdout.splitlines() if "on the control plane (" in line]
    assert said, "no stream's run said what the control plane made it wait"
    # and each stream's history keeps what its run met, with the run
    kept = []
    for name, _, _ in members:
        runs = cli("history", "--stream", name, "--runs", "--json")
        assert runs.returncode == 0, runs.stderr
        (run,) = json.loads(runs.stdout)
        kept += [run["control_plane"]] if "control_plane" in run else []
    assert len(kept) == len(said) and all(met["throttles"] + met["failures"] > 0 for met in kept)
