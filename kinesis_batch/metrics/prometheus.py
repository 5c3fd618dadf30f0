"""``--metrics prometheus``: the run's points pushed to a Prometheus Pushgateway, the convention
for batch jobs (prometheus_client's ``push_to_gateway``), as gauges named
``kinesis_batch_<metric>`` (snake case) with labels ``stream`` (and ``shard_id``), grouped by
job ``kinesis_batch`` and the stream: each run replaces its stream's last values."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kinesis_batch.errors import DependencyError
from kinesis_batch.metrics.points import STREAM, Point

JOB = "kinesis_batch"


def metric_name(point: Point) -> str:
    """``RecordsProcessed`` -> ``kinesis_batch_records_processed``."""
    return f"{JOB}_" + re.sub(r"(?<!^)(?=[A-Z])", "_", point.name).lower()


def label(dimension: str) -> str:
    """``ShardId`` -> ``shard_id``."""
    return re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", dimension).lower()


class PrometheusBackend:
    def __init__(self, pushgateway: str, timeout: float = 10.0) -> None:
        self.pushgateway, self.timeout = pushgateway, timeout

    def send(self, points: Sequence[Point]) -> None:
        from prometheus_client import CollectorRegistry, Gauge, push_to_gateway

        registry = CollectorRegistry()
        gauges: dict[str, Gauge] = {}
        # One label set per metric: a stream's total has shard_id "" beside its shards' values.
        names = list(dict.fromkeys(label(name) for point in points for name, _ in point.dimensions))
        stream = next((value for p in points for name, value in p.dimensions if name == STREAM), "")
        for point in points:
            given = {label(name): value for name, value in point.dimensions}
            gauge = gauges.get(point.name)
            if gauge is None:
                gauge = gauges[point.name] = Gauge(metric_name(point), point.name, names, registry=registry)
            gauge.labels(**{name: given.get(name, "") for name in names}).set(point.value)
        try:
            push_to_gateway(
                self.pushgateway, job=JOB, registry=registry, grouping_key={"stream": stream}, timeout=self.timeout
            )
        except OSError as exc:  # refused, unreachable, timed out, an HTTP error (urllib's are OSErrors)
            raise DependencyError(f"prometheus: {self.pushgateway}: {exc}") from exc


__all__ = ["JOB", "PrometheusBackend", "metric_name"]
