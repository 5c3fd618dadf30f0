"""The spark-submit path: what a Spark connection means, the command built from it, the package
zip, how spark-submit's exit code becomes an error the task acts on, and its cancellation."""

from __future__ import annotations

import json
import os
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.config import RunConfig
from kinesis_batch.environment import READ_STEP
from kinesis_batch.errors import (
    AccessDeniedError,
    DependencyError,
    IllegalArgumentError,
    InvalidStateError,
    LeaseLostError,
)
from kinesis_batch.serverless.attempt import JobResult
from kinesis_batch.spark.cluster import (
    DRIVER_JVM_OPTIONS,
    SparkCluster,
    Submission,
    package_zip,
    read_step_spec,
    submit_command,
)
from kinesis_batch.spark.session import local_jvm_options


@pytest.mark.parametrize(
    ("host", "port", "master"),
    [
        ("spark://spark-master", 7077, "spark://spark-master:7077"),
        ("spark-master", 7077, "spark://spark-master:7077"),
        ("spark://spark-master:7078", 7077, "spark://spark-master:7078"),
        ("spark://spark-master", None, "spark://spark-master"),
        ("yarn", None, "yarn"),
        ("k8s://https://api.example:6443", None, "k8s://https://api.example:6443"),
        ("local[2]", None, "local[2]"),
    ],
)
def test_the_master_url_from_a_spark_connection(host: str, port: int | None, master: str) -> None:
    assert SparkCluster.from_connection(host, port, {}).master == master


@pytest.mark.parametrize(
    ("host", "extra", "says"),
    [
        (None, {}, "has no host"),
        ("spark://m", {"deploy-mode": "cluster"}, "deploy-mode must be client"),
        ("spark://m", {"conf": ["spark.executor.memory=1g"]}, "conf extra must be an object"),
    ],
)
def test_a_spark_connection_that_cannot_work_is_refused(host: str | None, extra: dict[str, Any], says: str) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        SparkCluster.from_connection(host, None, extra)


def test_the_command_ships_the_package_and_runs_only_the_read_step(tmp_path: Path) -> None:
    cluster = SparkCluster.from_connection("spark://m", 7077, {"conf": {"spark.executor.memory": "2g"}})
    config = RunConfig.of(
        stream="clicks",
        output="analytics.clicks",
        format="iceberg",
        catalog="glue",
        worker_id="airflow-w",
        lease_seconds=3600,
        allow_gaps=True,
    )
    spec = read_step_spec(config, "run-7", tmp_path)
    command = submit_command(cluster, tmp_path / "kb.zip", [str(spec)], "kinesis-batch-run-7")
    assert command[1:7] == ["--master", "spark://m:7077", "--deploy-mode", "client", "--name", "kinesis-batch-run-7"]
    assert "spark.speculation=false" in command and "spark.executor.memory=2g" in command
    py_files = command.index("--py-files")
    assert command[py_files + 1 :] == [str(tmp_path / "kb.zip"), str(READ_STEP), str(spec)]
    # The read step gets the run's whole configuration, as the run has it, and its id.
    body = json.loads(spec.read_text())
    assert body["run_id"] == "run-7" and RunConfig.from_json(body["config"]) == config
    assert READ_STEP.exists() and READ_STEP.parent.name == "cli"


def test_the_package_zip_holds_the_package_and_its_page(tmp_path: Path) -> None:
    names = zipfile.ZipFile(package_zip(tmp_path)).namelist()
    assert "kinesis_batch/run/catch_up.py" in names and "kinesis_batch/spark/job.py" in names
    assert "kinesis_batch/airflow/ui/page.html" in names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]


@pytest.mark.parametrize(
    ("code", "error"),
    [(2, InvalidStateError), (3, LeaseLostError), (1, DependencyError), (4, DependencyError)],
)
def test_spark_submits_exit_code_becomes_the_error_a_task_acts_on(code: int, error: type[Exception]) -> None:
    said: list[str] = []
    with pytest.raises(error):
        Submission(["sh", "-c", f"echo reading; exit {code}"], {}, said.append).run()
    assert said == ["reading"]


def test_a_submits_failure_is_the_error_its_read_step_wrote_by_kind_else_its_exit_codes(tmp_path: Path) -> None:
    result = tmp_path / "result.json"
    denied = "access denied: kinesis:GetRecords on arn:aws:kinesis:r:1:stream/s for arn:aws:sts::1:assumed-role/x/i"
    said = JobResult("run-1", 2, denied, kind="AccessDeniedError")
    write = f"echo '{json.dumps(said.to_json())}' > {result}; exit 2"
    with pytest.raises(AccessDeniedError) as caught:
        Submission(["sh", "-c", write], {}, lambda line: None, result=result).run()
    assert str(caught.value) == denied
    killed = tmp_path / "none.json"  # killed before its last act: the exit code says what it can
    with pytest.raises(DependencyError, match="spark-submit exited with 137"):
        Submission(["sh", "-c", "exit 137"], {}, lambda line: None, result=killed).run()


def test_a_successful_submit_passes_its_output_on_with_the_given_environment() -> None:
    said: list[str] = []
    command = ["sh", "-c", 'echo "endpoint $AWS_ENDPOINT_URL_KINESIS"']
    Submission(command, {"AWS_ENDPOINT_URL_KINESIS": "http://k"}, said.append).run()
    assert said == ["endpoint http://k"]


def test_cancel_kills_the_submits_whole_process_group_at_once(tmp_path: Path) -> None:
    # A child that would outlive its parent unless the group goes: spark-submit's JVM is one.
    child_pid = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {child_pid}; echo started; wait"
    said: list[str] = []
    submission = Submission(["sh", "-c", script], {}, said.append)
    threading.Timer(0.5, submission.cancel).start()
    started = time.monotonic()
    with pytest.raises(DependencyError, match="cancelled"):
        submission.run()
    assert time.monotonic() - started < 10
    assert said == ["started"]
    pid = int(child_pid.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the group's child outlived the cancel"


def test_a_submission_cancelled_before_it_starts_never_starts(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    submission = Submission(["touch", str(marker)], {}, print)
    submission.cancel()
    with pytest.raises(DependencyError, match="before it started"):
        submission.run()
    assert not marker.exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose (its parent, killed, left it to init to reap).
    state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] if Path(f"/proc/{pid}").exists() else "Z"
    return state != "Z"


@pytest.mark.parametrize(
    ("master", "conf", "options"),
    [
        ("local[2]", {}, local_jvm_options()),
        ("local[*]", {DRIVER_JVM_OPTIONS: "-Xmx2g"}, "-Xmx2g"),
        ("spark://m:7077", {}, None),
        ("yarn", {}, None),
    ],
)
def test_a_submit_to_a_local_master_starts_the_driver_like_local_spark_unless_the_connection_says_otherwise(
    master: str, conf: dict[str, str], options: str | None, tmp_path: Path
) -> None:
    cluster = SparkCluster.from_connection(master, None, {"conf": conf})
    command = submit_command(cluster, tmp_path / "kb.zip", ["--stream", "s"], "kinesis-batch-run-1")
    given = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    drivers = [value.split("=", 1)[1] for value in given if value.startswith(f"{DRIVER_JVM_OPTIONS}=")]
    assert drivers == ([options] if options else [])
