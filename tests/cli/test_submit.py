"""The job runs under spark-submit too (the scale-out path), on the session spark-submit builds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from tests.runs import REPO, assert_exactly_once, read_output
from tests.streams import StreamFactory, put

pytestmark = [
    pytest.mark.contract("spark", why="spark-submit of the read step with this PySpark"),
    pytest.mark.isolated("spark-submit"),
]


def test_spark_submit_runs_the_catch_up_job_exactly_once(kinesis, streams: StreamFactory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    name = streams.create(shards=2)
    sent = put(kinesis, name, 400)
    output = tmp_path / "out"
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    result = subprocess.run(
        [
            str(spark_submit),
            "--master",
            "local[2]",
            "--conf",
            "spark.ui.enabled=false",
            str(REPO / "spark_jobs" / "catchup.py"),
            "--stream",
            name,
            "--output",
            str(output),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "400 records from 2 shards" in result.stdout
    assert_exactly_once(read_output(output), sent)
