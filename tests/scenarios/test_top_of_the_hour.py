"""Thirty single-stream runs started in the same second, as thirty hourly DAGs do, against the
account's control-plane limits (the limits proxy: AWS's figures) and endpoints that drop
connections: every run exits 0, each made its control-plane calls once, and the proxies count
the throttles and drops they rode out. The streams are quiet, as most of a fleet's are in a
given hour: the runs also prove that an hour with nothing new starts no read (no JVM here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from devkit.limits_proxy import LimitsProxy

from kinesis_batch.aws import dynamodb_client
from kinesis_batch.leases.store import LeaseStore
from tests.runs import REPO
from tests.streams import StreamFactory

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

    launched = start_together(commands, tmp_path, env)
    try:
        done = [p.communicate(timeout=300) for p in launched]
    finally:
        for process in launched:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)

    for process, (stdout, stderr) in zip(launched, done, strict=True):
        assert process.returncode == 0, stderr
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
