"""A local Spark Connect server for the tests of a remote read (``--spark-remote``): PySpark 4.x's
own server class, spark-submitted on ``local[N]`` in a process group of its own, listening on a
free loopback port. Its Python workers run this environment's interpreter with the AWS
settings given (endpoints travel in each task's spec).

PySpark 3.5's wheel has no Spark Connect server (its jar is not in the wheel): the tests that
need one skip there.
"""

from __future__ import annotations

import sys
from pathlib import Path

from devkit.stack import LOOPBACK, LocalServer, free_port, spawn_server

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def connect_jar() -> Path | None:
    """The Spark Connect jar of the installed pyspark, if it ships one (4.x does)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    found = sorted(jars.glob("spark-connect_*.jar"))
    return found[0] if found else None


def start_spark_connect(log_dir: Path, env: dict[str, str], *, master: str = "local[2]") -> LocalServer:
    """The server, ready: ``sc://127.0.0.1:PORT`` (:func:`remote_url`)."""
    import pyspark

    if connect_jar() is None:
        raise RuntimeError(f"pyspark {pyspark.__version__} ships no Spark Connect server")
    port = free_port()
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    conf = {
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.speculation": "false",
        "spark.driver.bindAddress": LOOPBACK,
        "spark.driver.host": LOOPBACK,
        "spark.python.daemon.module": "kinesis_batch.spark.daemon",
        # A client that died mid-read (kill -9) leaves its operation detached: interrupt it soon,
        # not after Spark's default 5 minutes, so its tasks stop reading (docs/platforms.md).
        "spark.connect.execute.manager.detachedTimeout": "2s",
        "spark.connect.execute.manager.maintenanceInterval": "1s",
    }
    argv = [str(submit), "--master", master, "--class", SERVER_CLASS, "--name", "kinesis-batch-tests-connect"]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv.append("spark-internal")
    workers = {"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": LOOPBACK, **env}
    return spawn_server("spark-connect", argv, port=port, env=workers, log_dir=log_dir, ready_timeout=120)


def remote_url(server: LocalServer) -> str:
    return f"sc://{LOOPBACK}:{server.port}"
