"""The read step on a remote Spark (Spark Connect, ``--spark-remote``): the same DataFrame job as
on a local session, through a local Spark Connect server (PySpark 4.x's own; tools/devkit).

- A whole catch-up of a stream that split and merged, whose client is killed -9 mid-read (from
  the server's task, once its first rows are written): the server lives on, the client's
  leases expire, and another worker on the same server lands every record exactly once.
- A server that does not answer is one line, exit 2, before any lease is taken.
- A server whose executors have no AWS credentials of their own (the client has its own: they
  never travel) is one line saying the executors lack them, exit 2, nothing published or held.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from devkit.spark_connect import connect_jar, remote_url, start_spark_connect
from devkit.stack import STATIC_ENV, LocalServer, LocalStack, free_port

from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.parsers import default_table
from kinesis_batch.run import CatchUpRun
from kinesis_batch.spark.engine import Engine, remote
from tests import faultpoints
from tests.crashes import after_expiry, lease_owners, pending_batches
from tests.output.support import read_rows, run_config, sink_of
from tests.runs import REPO, assert_exactly_once, assert_per_key_order, diamond_stream
from tests.streams import StreamFactory

pytestmark = [
    pytest.mark.contract("connect", why="the read step on a Spark Connect server of this PySpark"),
    pytest.mark.isolated("a Spark Connect server and a killed client"),
]

LEASE_SECONDS = 10  # the killed client's leases block the next worker this long


#: The server's own credentials, as an instance profile would give them: a file its executors
#: read afresh for each task, so a test can take them away for a while.
SERVER_CREDENTIALS = "[default]\naws_access_key_id = testing\naws_secret_access_key = testing\n"


@pytest.fixture(scope="module")
def server_credentials(tmp_path_factory: pytest.TempPathFactory) -> Path:
    credentials = tmp_path_factory.mktemp("spark-connect-aws") / "credentials"
    credentials.write_text(SERVER_CREDENTIALS)
    return credentials


@pytest.fixture(scope="module")
def server(
    stack: LocalStack, tmp_path_factory: pytest.TempPathFactory, server_credentials: Path
) -> Iterator[LocalServer]:
    if connect_jar() is None:
        pytest.skip("this pyspark ships no Spark Connect server (3.5's wheel)")
    # Its Python workers unpickle the fault observer of the killed client: they import tests.
    secrets = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    env = {
        **{key: value for key, value in STATIC_ENV.items() if key not in secrets},
        "AWS_SHARED_CREDENTIALS_FILE": str(server_credentials),
        "PYTHONPATH": str(REPO),
    }
    started = start_spark_connect(tmp_path_factory.mktemp("spark-connect-logs"), env)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def engine(server: LocalServer) -> Iterator[Engine]:
    connected = remote(remote_url(server))
    yield connected
    connected.session.stop()


@pytest.mark.timeout(600)
def test_a_client_killed_mid_read_on_spark_connect_then_another_lands_every_record_once(
    server: LocalServer, engine: Engine, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 400)  # three shards, a split and two merges
    output = ("--format", "parquet", "--output", str(tmp_path / "out"))
    run = ("run", "--stream", name, *output, "--lease-seconds", str(LEASE_SECONDS), "--read-limits", "none")
    client = subprocess.Popen(
        faultpoints.command("crash-driver", "reading", *run, "--spark-remote", remote_url(server), "--worker-id", "a"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=REPO,
    )
    _, stderr = client.communicate(timeout=300)
    assert client.returncode == -9, f"expected the client killed mid-read:\n{stderr[-2000:]}"
    sink = sink_of(output, app=default_table(name), stream=name)
    assert read_rows(sink) == {}, "nothing may be visible before publish"
    assert set(lease_owners(name).values()) == {"a"} and pending_batches(name), "the dead client's batch is pending"

    # Then another worker, on the same server, its clock past the killed client's (shorter) leases.
    config = run_config(name, output, "b", lease_seconds=LEASE_SECONDS, read_limits="none")
    report = CatchUpRun(
        config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: engine, clock=after_expiry
    ).run()

    assert set(report.recovered.values()) == {"discarded"}
    assert report.failed_task_attempts is None  # a Connect client sees no task attempts
    rows = read_rows(sink)
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
    assert pending_batches(name) == {} and lease_owners(name) == {}


def _client_installed() -> bool:
    try:
        import pyspark.sql.connect.session  # noqa: F401  # checks its own dependencies (pandas, grpc) as it loads
    except ImportError:
        return False
    return True


def test_a_spark_remote_that_does_not_answer_is_one_line_and_exit_2_before_a_lease(
    streams: StreamFactory, dynamodb: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=1)
    closed = f"sc://127.0.0.1:{free_port()}"
    ran = subprocess.run(
        [sys.executable, "-m", "kinesis_batch.cli", "run", "--stream", name, "--output", str(tmp_path / "out"),
         "--spark-remote", closed],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    lines = ran.stderr.strip().splitlines()
    said = (  # an environment without kinesis-batch[spark-connect] (make test-compat's spark-3.5) says so first
        f"Spark Connect at {closed} does not answer"
        if _client_installed()
        else f"--spark-remote {closed}: Spark Connect's client is not installed (pip install 'kinesis-batch[spark-"
    )
    assert len(lines) == 1 and lines[0].startswith(f"kinesis-batch: error: {said}"), ran.stderr
    tables = dynamodb.list_tables()["TableNames"]
    assert default_table(name) not in tables, "a lease table was made before Spark was reached"


def test_a_server_whose_executors_have_no_credentials_is_one_line_saying_so_and_nothing_is_held(
    server: LocalServer, server_credentials: Path, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=3)
    diamond_stream(kinesis, name, 20)
    output = ("--format", "parquet", "--output", str(tmp_path / "out"))
    server_credentials.write_text("")  # the server has no instance profile, role or keys: the client has
    try:
        ran = subprocess.run(
            [sys.executable, "-m", "kinesis_batch.cli", "run", "--stream", name, *output, "--read-limits", "none",
             "--spark-remote", remote_url(server)],
            capture_output=True, text=True, timeout=300, cwd=REPO,
        )  # fmt: skip
    finally:
        server_credentials.write_text(SERVER_CREDENTIALS)

    assert ran.returncode == 2, ran.stderr[-3000:]
    (line,) = ran.stderr.strip().splitlines()[-1:]
    assert line.startswith(
        "kinesis-batch: error: the Spark executors have no AWS credentials or region of their own (Unable to locate "
        "credentials): they read Kinesis with theirs (a Spark Connect server's"
    ), ran.stderr[-3000:]
    assert "AWS_DEFAULT_REGION" not in line and line.endswith("; nothing was published"), line
    assert read_rows(sink_of(output, app=default_table(name), stream=name)) == {}
    assert lease_owners(name) == {}, "every lease let go"
