"""The scale-out path for real: a Spark standalone master and worker on loopback (pyspark's own
spark-class).

- The DAG's read step spark-submitted through an Airflow Spark connection with the package
  shipped as a zip. The executors' Python cannot see this checkout, so the read works only if
  the package really travelled.
- A run whose executors are a bare Python (a fresh virtual environment, nothing installed) and
  get kinesis-batch and its native dependencies from ``kinesis-batch package``'s archive alone;
  without the archive's settings, one line naming the missing module and nothing published.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyspark
import pytest
from devkit.stack import LOOPBACK, STATIC_ENV, LocalServer, free_port, spawn_server

from kinesis_batch.environment import Package
from kinesis_batch.parsers import default_table
from kinesis_batch.spark.session import LOCAL_JVM_OPTIONS
from tests.output.support import output_args, read_rows, sink_of
from tests.runs import (
    Intruder,
    assert_exactly_once,
    assert_per_key_order,
    diamond_stream,
    read_output,
    rows_of_keys,
)
from tests.serverless import standin
from tests.serverless.standin import ARCH
from tests.streams import StreamFactory, put_kib

pytestmark = pytest.mark.isolated("a cluster")

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
AHEAD = timedelta(minutes=1)  # see test_kinesis_catchup.py: kinesalite stamps child shards ahead


def _start(name: str, args: list[str], port: int, logs: Path) -> LocalServer:
    # The daemons only schedule: the fast-starting JVM of local Spark suits them (and the
    # executor and driver below), on a 2-core machine shared with the rest of the suite.
    env = {**STATIC_ENV, "SPARK_LOCAL_IP": LOOPBACK, "SPARK_DAEMON_MEMORY": "256m"}
    env["SPARK_DAEMON_JAVA_OPTS"] = LOCAL_JVM_OPTIONS
    return spawn_server(name, [str(SPARK_CLASS), *args], port=port, env=env, log_dir=logs, grace=10, ready_timeout=90)


def _master_state(web_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{web_url}/json/", timeout=5) as response:
        state: dict[str, Any] = json.load(response)
        return state


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(master URL, master web URL) of a standalone master with one 2-core worker."""
    logs = tmp_path_factory.mktemp("spark-cluster")
    port, web, worker_web = free_port(), free_port(), free_port()
    master_args = ["--host", LOOPBACK, "--port", str(port), "--webui-port", str(web)]
    master = _start("master", ["org.apache.spark.deploy.master.Master", *master_args], port, logs)
    master_url, web_url = f"spark://{LOOPBACK}:{port}", f"http://{LOOPBACK}:{web}"
    worker_args = ["--host", LOOPBACK, "--cores", "2", "--memory", "1g", "--webui-port", str(worker_web)]
    worker_args += ["--work-dir", str(logs / "work")]
    try:
        worker = _start("worker", ["org.apache.spark.deploy.worker.Worker", master_url, *worker_args], worker_web, logs)
    except BaseException:
        master.stop()
        raise
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if any(w["state"] == "ALIVE" for w in _master_state(web_url).get("workers", [])):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"no Spark worker registered:\n{worker.log_tail(40)}")
            time.sleep(0.5)
        yield master_url, web_url
    finally:
        worker.stop()
        master.stop()


@pytest.fixture(scope="module")
def executor_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """This interpreter with its installed dependencies but without kinesis-batch, whether it is
    installed editable (a .pth file) or as a wheel (-S: no .pth file is read; a folder of links to
    site-packages' entries, kinesis-batch's left out, is put on the path by hand)."""
    folder = tmp_path_factory.mktemp("executor-python")
    wrapper, site = folder / "python", folder / "site-packages"
    site.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(("kinesis_batch", "__editable__")):
            (site / entry.name).symlink_to(entry)
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    no_package = subprocess.run([str(wrapper), "-c", "import kinesis_batch"], capture_output=True, cwd="/")
    assert no_package.returncode != 0, "the executors' Python must not see the checkout"
    dependencies = subprocess.run([str(wrapper), "-c", "import boto3, pyarrow, aws_kinesis_agg"], cwd="/")
    assert dependencies.returncode == 0
    return str(wrapper)


@pytest.fixture
def cluster_connection(
    spark_cluster: tuple[str, str], executor_python: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """An Airflow Spark connection ``spark_cluster`` to the standalone cluster."""
    master_url, _ = spark_cluster
    host, port = master_url.rsplit(":", 1)
    settings = {
        "spark.pyspark.python": executor_python,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executor.memory": "512m",
        "spark.executor.extraJavaOptions": LOCAL_JVM_OPTIONS,
        "spark.driver.extraJavaOptions": LOCAL_JVM_OPTIONS,
        "spark.ui.enabled": "false",
    }
    connection = {"conn_type": "spark", "host": host, "port": int(port), "extra": {"conf": settings}}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps(connection))
    monkeypatch.setenv("SPARK_LOCAL_IP", LOOPBACK)
    yield "spark_cluster"


def test_a_read_spark_submitted_to_a_standalone_cluster_is_exactly_once_and_keeps_its_leases_past_their_duration(
    dagbag: Any,
    spark_cluster: tuple[str, str],
    cluster_connection: str,
    kinesis: Any,
    streams: StreamFactory,
    tmp_path: Path,
) -> None:
    _, web_url = spark_cluster
    name = streams.create(shards=3)
    # 12 KiB in the lowest shard, read at 1 KiB/s: the read step takes over 12 s against a 10 s
    # lease, which the task renews while spark-submit reads (the diamond's own records are tiny).
    # Outliving it once is the claim here; twice, and on its own, is test_kinesis_catchup's.
    slow = put_kib(kinesis, name, 12, hash_key=0)
    sent = diamond_stream(kinesis, name, 60)
    output = tmp_path / "out"
    conf = {
        "stream": name,
        "output": str(output),
        "spark_conn_id": cluster_connection,
        "lease_seconds": 10,
        "read_limits": "5,1024",
    }

    with Intruder(name) as intruder:  # another worker, taking the leases the moment they lapse
        dag_run = dagbag.get_dag("kinesis_catchup").test(logical_date=datetime.now(UTC) + AHEAD, run_conf=conf)

    assert dag_run.state == "success", [(ti.task_id, ti.state) for ti in dag_run.get_task_instances()]
    rows = read_output(output)
    assert_exactly_once(rows, slow + sent)
    assert_per_key_order(rows_of_keys(rows, "key-"))  # the diamond's (put_kib's data are not numbers)
    apps = _master_state(web_url)["completedapps"]
    assert any(app["name"].startswith("kinesis-batch-kinesis_catchup-") for app in apps), apps
    read = next(ti for ti in dag_run.get_task_instances() if ti.task_id == "run_spark_job")
    assert (read.end_date - read.start_date).total_seconds() > 12, "the read must outlive its lease"
    assert intruder.tries_after_expiry >= 10, "the other worker tried while the lease would have lapsed"
    assert intruder.taken == []


@pytest.fixture(scope="module")
def environment_archive(environment_archive_file: Path) -> dict[str, str]:
    """``kinesis-batch package``'s archive for this machine's Python and architecture (the
    session's, shared with the EMR Serverless tests): its Spark settings."""
    return dict(Package(str(environment_archive_file), standin.PYTHON, ARCH).settings)


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    return standin.bare_python(tmp_path_factory.mktemp("bare") / "venv")


def _run_on_cluster(
    master_url: str, python: str, settings: dict[str, str], stream: str, output: tuple[str, ...]
) -> subprocess.CompletedProcess[str]:
    """``kinesis-batch run`` whose driver is this process's Python and whose executors, on the
    standalone cluster, run ``python`` with ``settings``."""
    conf = {
        "spark.executor.memory": "512m",
        "spark.executor.extraJavaOptions": LOCAL_JVM_OPTIONS,
        "spark.driver.extraJavaOptions": LOCAL_JVM_OPTIONS,
        **settings,
    }
    submit_args = " ".join(f"--conf {shlex.quote(f'{key}={value}')}" for key, value in conf.items())
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_SUBMIT_ARGS": f"{submit_args} pyspark-shell"}
    command = [str(Path(sys.executable).with_name("kinesis-batch")), "run", "--stream", stream, *output,
               "--spark-master", master_url, "--read-limits", "none"]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd="/")


@pytest.mark.contract(
    "spark", why="the read step spark-submitted to a cluster of this PySpark, its executors on a bare Python"
)
@pytest.mark.timeout(900)
def test_executors_on_a_bare_python_read_a_resharded_stream_into_delta_on_s3_through_the_archive_alone(
    spark_cluster: tuple[str, str],
    environment_archive: dict[str, str],
    bare_python: str,
    kinesis: Any,
    streams: StreamFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    master_url, _ = spark_cluster
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 60)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    sink = sink_of(output, app=default_table(name), stream=name)

    without = _run_on_cluster(master_url, bare_python, {}, name, output)
    assert without.returncode == 2, without.stderr[-3000:]
    (line,) = without.stderr.strip().splitlines()[-1:]
    assert "kinesis-batch: error: the executors cannot import kinesis_batch" in line, without.stderr[-3000:]
    assert line.endswith("; nothing was published"), line
    assert read_rows(sink) == {}, "nothing may be published"

    ran = _run_on_cluster(master_url, bare_python, environment_archive, name, output)
    assert ran.returncode == 0, ran.stderr[-3000:]
    rows = read_rows(sink)
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
