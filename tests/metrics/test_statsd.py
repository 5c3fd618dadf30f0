"""``--metrics statsd`` outside Airflow: to STATSD_HOST:STATSD_PORT with the statsd library,
the dimensions in the names, counts as counters, the steps as timings, the lags as gauges;
received by a UDP listener on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from kinesis_batch.metrics.points import points_of
from kinesis_batch.metrics.settings import SUMMARY
from kinesis_batch.metrics.statsd import StatsdBackend, stat_name
from tests.metrics.support import TIMINGS, shard
from tests.runs import REPO


@pytest.fixture
def listener(monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(5)
    monkeypatch.setenv("STATSD_HOST", "127.0.0.1")
    monkeypatch.setenv("STATSD_PORT", str(udp.getsockname()[1]))
    monkeypatch.delenv("AIRFLOW_CTX_DAG_ID", raising=False)
    yield udp
    udp.close()


def test_each_point_arrives_as_a_statsd_line(listener: socket.socket) -> None:
    points = points_of("clicks", [shard("s-0", 10, lag_ms=4_000)], TIMINGS, SUMMARY)
    StatsdBackend().send(points)
    lines = set()
    for _ in points:
        lines.add(listener.recv(1024).decode())
    assert "kinesis_batch.clicks.RecordsProcessed:10|c" in lines
    assert "kinesis_batch.clicks.BytesProcessed:10240|c" in lines
    assert "kinesis_batch.clicks.LagSeconds:4.0|g" in lines
    assert "kinesis_batch.clicks.ReadSeconds:3500.000000|ms" in lines


def test_a_name_part_keeps_to_what_statsd_can_carry() -> None:
    (point,) = [p for p in points_of("a.b:c", [shard("s-0", 1)], {}, SUMMARY) if p.name == "DeadLetters"]
    assert stat_name(point) == "a_b_c.DeadLetters"


@pytest.mark.processes  # an Airflow task's process: Airflow's Stats is made once per process
@pytest.mark.isolated("a fresh environment")
def test_inside_an_airflow_task_the_points_go_through_airflows_own_statsd(listener: socket.socket) -> None:
    code = (
        "from kinesis_batch.metrics.statsd import StatsdBackend\n"
        "from kinesis_batch.metrics.points import points_of\n"
        "from tests.metrics.support import shard\n"
        "StatsdBackend().send(points_of('clicks', [shard('s-0', 10)], {}, 'summary'))\n"
    )
    port = str(listener.getsockname()[1])
    airflow = {
        "AIRFLOW_CTX_DAG_ID": "kinesis_catchup",  # what Airflow sets in a task's environment
        "AIRFLOW__METRICS__STATSD_ON": "True",
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__STATSD_PORT": port,
        "STATSD_PORT": "9",  # not this: Airflow's own settings say where
    }
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, **airflow}, capture_output=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    received = set()
    while "airflow.kinesis_batch.clicks.RecordsProcessed:10|c" not in received:
        received.add(listener.recv(1024).decode())  # Airflow's own figures come too; a timeout fails
