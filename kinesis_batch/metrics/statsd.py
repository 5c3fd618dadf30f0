"""``--metrics statsd``: through Airflow's own Stats client inside an Airflow task (so the
metrics go wherever the deployment's Airflow metrics go), else to ``STATSD_HOST``:
``STATSD_PORT`` (default 127.0.0.1:8125) with the ``statsd`` library. StatsD has no
dimensions: they are in the name, ``kinesis_batch.<Stream>[.<ShardId>].<Metric>``. Counts are
counters, the steps' seconds timings (ms), the lags gauges."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from kinesis_batch.errors import DependencyError
from kinesis_batch.metrics.points import BYTES, COUNT, Point

PREFIX = "kinesis_batch"
TIMED = {"ReadSeconds", "PublishSeconds", "CommitSeconds"}


def stat_name(point: Point) -> str:
    """The point's StatsD name: its dimensions' values, then its name (``.`` and ``:`` can't be in a part)."""
    parts = [re.sub(r"[^A-Za-z0-9_-]", "_", value) for _, value in point.dimensions]
    return ".".join([*parts, point.name])


def in_airflow_task() -> bool:
    return "AIRFLOW_CTX_DAG_ID" in os.environ  # what Airflow sets in a task's environment


class StatsdBackend:
    """``client``: what sends (Airflow's ``Stats`` or a ``statsd.StatsClient``); by default the
    one this process has (see the module's doc)."""

    def __init__(self, client: Any = None) -> None:
        self.client = client if client is not None else _client()

    def send(self, points: Sequence[Point]) -> None:
        try:
            for point in points:
                name = stat_name(point)
                if point.unit in (COUNT, BYTES):
                    self.client.incr(name, int(point.value))
                elif point.name in TIMED:
                    self.client.timing(name, point.value * 1000)
                else:
                    self.client.gauge(name, point.value)
        except OSError as exc:  # UDP: only a local failure (no route, a name that does not resolve)
            raise DependencyError(f"statsd: {exc}") from exc


def _client() -> Any:
    if in_airflow_task():
        from airflow.stats import Stats

        return _Prefixed(Stats)
    import statsd

    host, port = os.environ.get("STATSD_HOST", "127.0.0.1"), int(os.environ.get("STATSD_PORT", "8125"))
    try:
        return statsd.StatsClient(host, port, prefix=PREFIX)
    except OSError as exc:  # the host's name does not resolve
        raise DependencyError(f"statsd: {host}:{port}: {exc}") from exc


class _Prefixed:
    """Airflow's Stats with our prefix (Airflow adds its own, ``airflow.``, before it)."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats

    def incr(self, name: str, count: int) -> None:
        self.stats.incr(f"{PREFIX}.{name}", count)

    def timing(self, name: str, ms: float) -> None:
        self.stats.timing(f"{PREFIX}.{name}", ms)

    def gauge(self, name: str, value: float) -> None:
        self.stats.gauge(f"{PREFIX}.{name}", value)


__all__ = ["PREFIX", "StatsdBackend", "in_airflow_task", "stat_name"]
