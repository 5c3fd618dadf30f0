"""The EMR Serverless stand-in (tools/devkit/emr_serverless.py) for the benchmarks: job runs that
really run (spark-submit on this machine) and are billed as EMR Serverless bills them (one
default worker of 4 vCPU for the job's time, a one-minute minimum), so a benchmark can print
the billed vCPU-hours of its ways of running.

    with stand_in(scratch, env, bucket) as emr:
        flags = emr.flags()          # --emr-serverless-application ... for a run of its own
        entry = emr.entry()          # the streams file's emr_serverless = {...}
        emr.billed()                 # every job run so far: (state, vCPU-hours)
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from devkit.stack import LocalServer, start_emr_serverless

ROLE = "arn:aws:iam::123456789012:role/kinesis-batch-job"  # moto's account, as the stand-in's
IMAGE_PYTHON = "/usr/bin/python3.11"  # the EMR 7.x image's Python 3.11 (kinesis_batch.serverless.releases)
ARCH = {"arm64": "aarch64"}.get(platform.machine(), platform.machine())
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


@dataclass
class StandIn:
    server: LocalServer
    application: str
    environment: str

    def client(self) -> Any:
        return boto3.client("emr-serverless", endpoint_url=self.server.url)

    def flags(self) -> list[str]:
        return ["--emr-serverless-application", self.application, "--execution-role", ROLE,
                "--environment", self.environment]  # fmt: skip

    def entry(self) -> str:
        return (
            f'{{application_id = "{self.application}", execution_role_arn = "{ROLE}", '
            f'environment = "{self.environment}"}}'
        )

    def billed(self) -> list[tuple[str, float]]:
        """Every job run of the application so far: its state and billed vCPU-hours."""
        client = self.client()
        listed = client.list_job_runs(applicationId=self.application)["jobRuns"]
        runs = [client.get_job_run(applicationId=self.application, jobRunId=job["id"])["jobRun"] for job in listed]
        return [(run["state"], float(run["billedResourceUtilization"]["vCPUHour"])) for run in runs]


@contextmanager
def stand_in(scratch: Path, env: dict[str, str], bucket: str, archive: Path | None = None) -> Iterator[StandIn]:
    """The stand-in on a free port, an application, and ``kinesis-batch package``'s archive for
    this Python uploaded to ``bucket`` (moto's S3, where ``env`` points) as its environment:
    ``archive``, one that command built already, or one built now."""
    bare = scratch / "image-python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    images = {IMAGE_PYTHON: str(bare / "bin" / "python")}
    server = start_emr_serverless(scratch / "emr-serverless", {**env, "SPARK_LOCAL_IP": "127.0.0.1"}, images)
    try:
        archive = archive or _archive(scratch / "environment")
        key = f"environments/{archive.name}"
        boto3.client("s3").upload_file(str(archive), bucket, key)
        arch = {"x86_64": "X86_64", "aarch64": "ARM64"}[ARCH]
        client = boto3.client("emr-serverless", endpoint_url=server.url)
        made = client.create_application(name="kb", releaseLabel="emr-7.12.0", type="Spark", architecture=arch)
        yield StandIn(server, str(made["applicationId"]), f"s3://{bucket}/{key}")
    finally:
        server.stop()


def _archive(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        [sys.executable, "-m", "kinesis_batch.cli", "package", "--python", PYTHON, "--arch", ARCH,
         "--output", str(folder), "--json"],
        capture_output=True, text=True, timeout=900, check=False, cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    if made.returncode != 0:
        raise SystemExit(f"kinesis-batch package failed: {made.stderr[-2000:]}")
    return Path(json.loads(made.stdout)["archive"])
