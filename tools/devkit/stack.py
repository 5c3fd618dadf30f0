"""Local AWS endpoints for the demo and the tests, as separate processes on loopback.

- moto's server for DynamoDB (one request at a time, so conditional writes and transactions are
  atomic as on AWS: devkit.moto_serial), and S3
  and Glue for the table sinks (S3 honours ``If-None-Match``, which Delta commits rely on);
- kinesalite (fast) or kinesis-local, the kinesis-mock engine LocalStack uses (slow, closest
  to AWS) for Kinesis. Not moto's Kinesis: its SplitShard/MergeShards are broken.

Each server runs in a process group of its own on a free 127.0.0.1 port and is stopped by
that group (never by name): SIGTERM, then SIGKILL after a grace period (kinesis-local ignores
SIGTERM). The npm emulators live in ``tools/emulators`` (installed by ``tools/bootstrap.sh``),
or wherever ``KINESIS_BATCH_EMULATORS`` points.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinesis_batch.errors import DependencyError, InvalidStateError

LOOPBACK = "127.0.0.1"
TOOLS = Path(__file__).resolve().parents[1]  # tools/ of the checkout: the devkit is never installed
EMULATORS = Path(os.environ.get("KINESIS_BATCH_EMULATORS", TOOLS / "emulators"))

#: The standard AWS environment that points boto3 (and Spark workers, Airflow tasks) at a stack.
STATIC_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def wait_active(kinesis: Any, stream: str, timeout: float = 30.0) -> None:
    """Wait until ``stream`` is ACTIVE (emulators pass through CREATING and UPDATING too)."""
    deadline = time.monotonic() + timeout
    while True:
        status = kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamStatus"]
        if status == "ACTIVE":
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"stream {stream} still {status} after {timeout:.0f} s")
        time.sleep(0.05)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalServer:
    """One server process in its own process group."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    grace: float = 3.0

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise DependencyError(
                    f"{self.name} exited with {self.process.returncode} while starting:\n{self.log_tail()}"
                )
            with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, self.port), timeout=0.5):
                return
            time.sleep(0.1)
        self.stop()
        raise DependencyError(f"{self.name} did not listen on {self.url} within {timeout:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after ``grace`` seconds."""
        if self.process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, self.grace), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue


def spawn_server(
    name: str,
    argv: list[str],
    *,
    port: int,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    log_dir: Path,
    grace: float = 3.0,
    ready_timeout: float = 60.0,
) -> LocalServer:
    """Start ``argv`` in a process group of its own, logging to ``log_dir/<name>.log``, and wait
    until it listens on ``port`` (it is stopped again if it does not)."""
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, stopped as one
        )
    server = LocalServer(name, port, process, log_path, grace)
    try:
        server.wait_ready(ready_timeout)
    except BaseException:
        server.stop()
        raise
    return server


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise InvalidStateError("Node.js is needed for the local Kinesis emulators: install nodejs (and npm)")
    return node


def _emulator(package: str) -> Path:
    path = EMULATORS / "node_modules" / package
    if not path.exists():
        raise InvalidStateError(f"{package} is not installed in {EMULATORS}: run tools/bootstrap.sh (npm ci there)")
    return path


PUSHGATEWAY = "/usr/bin/prometheus-pushgateway"  # Debian's prometheus-pushgateway (tools/bootstrap.sh)


def start_moto(log_dir: Path) -> LocalServer:
    """moto_server on a free port (serves DynamoDB, S3 and Glue; its Kinesis is not used)."""
    port = free_port()
    # moto's app with DynamoDB requests one at a time (devkit.moto_serial: atomic
    # conditional writes and transactions, as on AWS).
    argv = [sys.executable, "-m", "devkit.moto_serial", "-H", LOOPBACK, "-p", str(port)]
    return spawn_server("moto_server", argv, port=port, cwd=TOOLS, log_dir=log_dir)


def start_emr_serverless(log_dir: Path, env: dict[str, str], images: dict[str, str]) -> LocalServer:
    """The EMR Serverless stand-in (devkit.emr_serverless) on a free port: its job runs fetch
    from and write to the stack ``env`` points at, on the local Pythons ``images`` names for
    the release image's paths."""
    port = free_port()
    work = log_dir / "emr-serverless-jobs"
    work.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "devkit.emr_serverless", "-H", LOOPBACK, "-p", str(port), "--work", str(work)]
    argv += [arg for image, local in images.items() for arg in ("--image-python", f"{image}={local}")]
    return spawn_server("emr-serverless", argv, port=port, cwd=TOOLS, env=env, log_dir=log_dir, grace=15.0)


def start_pushgateway(log_dir: Path, binary: str = PUSHGATEWAY) -> LocalServer:
    """Debian's Prometheus Pushgateway on a free port, keeping nothing on disk (--metrics prometheus)."""
    port = free_port()
    argv = [binary, f"--web.listen-address={LOOPBACK}:{port}", "--persistence.file="]
    return spawn_server("pushgateway", argv, port=port, log_dir=log_dir)


def start_kinesalite(log_dir: Path, *, shard_limit: int = 1000) -> LocalServer:
    port = free_port()
    main = _emulator("kinesalite") / "cli.js"
    argv = [
        _node(),
        "-r",
        str(EMULATORS / "loopback.js"),
        "-r",
        str(EMULATORS / "client-aborts.js"),  # a client killed mid-request must not end the emulator
        str(main),
        "--port",
        str(port),
        "--shardLimit",
        str(shard_limit),
        "--createStreamMs",
        "20",
        "--deleteStreamMs",
        "20",
        "--updateStreamMs",
        "20",
    ]
    return spawn_server("kinesalite", argv, port=port, log_dir=log_dir)


def start_kinesis_local(log_dir: Path, *, shard_limit: int = 200) -> LocalServer:
    port, tls_port = free_port(), free_port()
    package = _emulator("kinesis-local")
    env = {
        "KINESIS_MOCK_PLAIN_PORT": str(port),
        "KINESIS_MOCK_TLS_PORT": str(tls_port),
        "SHARD_LIMIT": str(shard_limit),
        "CREATE_STREAM_DURATION": "50ms",
        "DELETE_STREAM_DURATION": "50ms",
        "SPLIT_SHARD_DURATION": "50ms",
        "MERGE_SHARDS_DURATION": "50ms",
        "UPDATE_SHARD_COUNT_DURATION": "50ms",
        "LOG_LEVEL": "WARN",
    }
    # It reads server.json from its working directory, and ignores SIGTERM (short grace).
    argv = [_node(), "-r", str(EMULATORS / "loopback.js"), "main.js"]
    return spawn_server("kinesis-local", argv, port=port, cwd=package, env=env, log_dir=log_dir, grace=0.5)


@dataclass
class LocalStack:
    """The running endpoints; ``env(kinesis=...)`` is the AWS environment that points at them."""

    dynamodb: LocalServer
    kinesis: dict[str, LocalServer] = field(default_factory=dict)
    log_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))

    def env(self, kinesis: str = "kinesalite") -> dict[str, str]:
        return {
            **STATIC_ENV,
            "AWS_ENDPOINT_URL_DYNAMODB": self.dynamodb.url,
            "AWS_ENDPOINT_URL_KINESIS": self.kinesis[kinesis].url,
            # The same moto_server is S3 (Delta and Iceberg tables) and Glue (an Iceberg catalog).
            "AWS_ENDPOINT_URL_S3": self.dynamodb.url,
            "AWS_ENDPOINT_URL_GLUE": self.dynamodb.url,
            "AWS_ENDPOINT_URL_CLOUDWATCH": self.dynamodb.url,  # --metrics cloudwatch
        }

    def airflow_env(self, home: Path, dags: Path, kinesis: str = "kinesalite") -> dict[str, str]:
        """Settings of a local Airflow (SQLite in ``home``, DAGs from ``dags``) whose
        ``aws_default`` connection points at this stack, one endpoint per service."""
        connection = {
            "conn_type": "aws",
            "login": STATIC_ENV["AWS_ACCESS_KEY_ID"],
            "password": STATIC_ENV["AWS_SECRET_ACCESS_KEY"],
            "extra": {
                "region_name": STATIC_ENV["AWS_DEFAULT_REGION"],
                "service_config": {
                    "kinesis": {"endpoint_url": self.kinesis[kinesis].url},
                    "dynamodb": {"endpoint_url": self.dynamodb.url},
                    "s3": {"endpoint_url": self.dynamodb.url},
                },
            },
        }
        return {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
            "AIRFLOW_CONN_AWS_DEFAULT": json.dumps(connection),
        }


def migrate_airflow_db(env: dict[str, str]) -> None:
    """``airflow db migrate`` with ``env`` (a fresh SQLite database takes a few seconds)."""
    airflow = str(Path(sys.executable).with_name("airflow"))
    done = subprocess.run([airflow, "db", "migrate"], env={**os.environ, **env}, capture_output=True, text=True)
    if done.returncode != 0:
        raise DependencyError(f"airflow db migrate failed:\n{done.stderr[-2000:]}")


@contextlib.contextmanager
def local_stack(kinesis: tuple[str, ...] = ("kinesalite",), log_dir: Path | None = None) -> Iterator[LocalStack]:
    """Start moto_server and the named Kinesis emulators; stop them all on exit."""
    starters = {"kinesalite": start_kinesalite, "kinesis-local": start_kinesis_local}
    unknown = set(kinesis) - set(starters)
    if unknown:
        raise InvalidStateError(f"unknown Kinesis emulator(s): {', '.join(sorted(unknown))}")
    logs = log_dir or Path(tempfile.mkdtemp(prefix="kinesis-batch-stack-"))
    servers: list[LocalServer] = []
    try:
        dynamodb = start_moto(logs)
        servers.append(dynamodb)
        stack = LocalStack(dynamodb, log_dir=logs)
        for name in kinesis:
            stack.kinesis[name] = starters[name](logs)
            servers.append(stack.kinesis[name])
        yield stack
    finally:
        for server in reversed(servers):
            server.stop()
