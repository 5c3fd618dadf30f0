"""The EMR Serverless stand-in (tools/devkit/emr_serverless.py) as the tests use it: one server
per test session whose release image has a bare Python 3.11 (nothing installed), and per test an
application and the environment archive on moto's S3 (moto is reset between tests)."""

from __future__ import annotations

import fcntl
import json
import os
import platform
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from devkit.stack import LocalServer

from kinesis_batch.serverless.request import DRIVER_ENV
from tests.output.support import make_bucket

ROLE = "arn:aws:iam::123456789012:role/kinesis-batch-job"  # moto's account, as the stand-in's
ARCH = {"arm64": "aarch64"}.get(platform.machine(), platform.machine())
IMAGE_PYTHON = "/usr/bin/python3.11"  # the EMR 7.x image's Python 3.11 (kinesis_batch.serverless.releases)
#: The Python the archive is packaged for: this one's version, since PySpark wants the executors'
#: minor version to be the driver's (make test-compat runs on 3.12 and 3.13 too).
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def driver_conf(endpoints: dict[str, str], access_key: str) -> tuple[str, ...]:
    """The ``--emr-serverless-conf`` flags of a job run whose driver calls AWS at ``endpoints``
    (by service: ``{"S3": url}``), signs with ``access_key`` (its role's, told apart from the
    orchestrator's) and knows this process's pyiceberg catalogs, as a deployment gives them."""
    conf = [f"{DRIVER_ENV}AWS_ENDPOINT_URL_{service}={url}" for service, url in endpoints.items()]
    conf += [f"{DRIVER_ENV}AWS_ACCESS_KEY_ID={access_key}", f"{DRIVER_ENV}AWS_SECRET_ACCESS_KEY=job-secret"]
    conf += [f"{DRIVER_ENV}{key}={value}" for key, value in os.environ.items() if key.startswith("PYICEBERG_")]
    return tuple(part for setting in conf for part in ("--emr-serverless-conf", setting))


def bare_python(folder: Path) -> str:
    """A fresh virtual environment of this Python, with nothing installed (not even pip)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = str(folder / "bin" / "python")
    nothing = subprocess.run([python, "-c", "import pyarrow"], capture_output=True, cwd="/")
    assert nothing.returncode != 0, "the image's Python must have nothing installed"
    return python


def shared_archive(root: Path) -> Path:
    """``kinesis-batch package`` for this Python on this machine, built once under ``root`` for
    every pytest worker of the session (the first builds it, the others wait for it)."""
    folder = root / "kinesis-batch-environment"
    folder.mkdir(exist_ok=True)
    with (root / "kinesis-batch-environment.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = sorted(folder.glob("kinesis-batch-*.tar.gz"))
        return built[0] if built else build_archive(folder)


def build_archive(folder: Path) -> Path:
    """``kinesis-batch package`` for this Python (:data:`PYTHON`) on this machine."""
    made = subprocess.run(
        [str(Path(sys.executable).with_name("kinesis-batch")), "package", "--python", PYTHON, "--arch", ARCH,
         "--output", str(folder), "--json"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return Path(json.loads(made.stdout)["archive"])


@dataclass
class StandIn:
    server: LocalServer
    archive: Path

    @property
    def url(self) -> str:
        return self.server.url

    def client(self) -> Any:
        return boto3.client("emr-serverless", endpoint_url=self.url)

    def application(self, *, release: str = "emr-7.12.0", type: str = "Spark", architecture: str = "") -> str:
        arch = architecture or {"x86_64": "X86_64", "aarch64": "ARM64"}[ARCH]
        made = self.client().create_application(name="kb", releaseLabel=release, type=type, architecture=arch)
        return str(made["applicationId"])

    def behave(self, application_id: str, **behaviour: Any) -> None:
        """The stand-in's own knob: ``queued_seconds``, ``queued_polls``, ``lie``."""
        request = urllib.request.Request(
            f"{self.url}/_standin/applications/{application_id}",
            data=json.dumps(behaviour).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=10).read()

    def environment(self, *, runs: bool = True) -> str:
        """The archive uploaded to a fresh bucket of moto's S3: its s3:// URI. ``runs`` False: a
        stand-in object of the archive's name, for a test whose job runs never run Spark (the
        checks read the name and that the object is there; 149 MiB into moto costs seconds)."""
        bucket = make_bucket()
        key = f"environments/{self.archive.name}"
        if runs:
            boto3.client("s3").upload_file(str(self.archive), bucket, key)
        else:
            boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=b"not run")
        return f"s3://{bucket}/{key}"

    def polls(self, job_run_id: str) -> dict[str, int]:
        """How often each state of the job run was polled (the stand-in's own count)."""
        with urllib.request.urlopen(f"{self.url}/_standin/jobruns/{job_run_id}", timeout=10) as answer:
            polls: dict[str, int] = json.loads(answer.read())["polls"]
        return polls

    def job_runs(self, application_id: str) -> list[dict[str, Any]]:
        """Every job run of the application, newest first, as GetJobRun says it."""
        client = self.client()
        runs = client.list_job_runs(applicationId=application_id)["jobRuns"]
        return [client.get_job_run(applicationId=application_id, jobRunId=run["id"])["jobRun"] for run in runs]

    def driver_log(self, job_run_id: str) -> str:
        return (self.server.log_path.parent / "emr-serverless-jobs" / job_run_id / "driver.log").read_text()
