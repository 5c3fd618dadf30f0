"""``--metrics prometheus`` to Debian's Pushgateway, read back over its HTTP API: gauges
``kinesis_batch_*`` grouped by job and stream, a stream's total beside its shards'; an
unreachable gateway is a DependencyError."""

from __future__ import annotations

import json
import urllib.request

import pytest

from kinesis_batch.errors import DependencyError
from kinesis_batch.metrics.points import points_of
from kinesis_batch.metrics.prometheus import PrometheusBackend
from kinesis_batch.metrics.settings import DETAILED, SUMMARY
from tests.metrics.support import TIMINGS, shard


def pushed(url: str, stream: str) -> dict[tuple[str, str], float]:
    """(metric, shard_id) -> value of the group job=kinesis_batch, stream=``stream``."""
    with urllib.request.urlopen(f"{url}/api/v1/metrics", timeout=10) as response:
        groups = json.load(response)["data"]
    found: dict[tuple[str, str], float] = {}
    for group in groups:
        if group["labels"].get("job") != "kinesis_batch" or group["labels"].get("stream") != stream:
            continue
        for name, family in group.items():
            if name.startswith("kinesis_batch_"):
                for metric in family["metrics"]:
                    found[(name, metric["labels"].get("shard_id", ""))] = float(metric["value"])
    return found


def test_a_runs_gauges_are_pushed_and_read_back(pushgateway: str) -> None:
    points = points_of("clicks", [shard("s-0", 10), shard("s-1", 5)], TIMINGS, DETAILED)
    PrometheusBackend(pushgateway).send(points)
    values = pushed(pushgateway, "clicks")
    assert values[("kinesis_batch_records_processed", "")] == 15
    assert values[("kinesis_batch_records_processed", "s-1")] == 5
    assert values[("kinesis_batch_read_seconds", "")] == 3.5
    PrometheusBackend(pushgateway).send(points_of("clicks", [shard("s-0", 2)], TIMINGS, SUMMARY))
    assert pushed(pushgateway, "clicks")[("kinesis_batch_records_processed", "")] == 2  # a run replaces the last


def test_an_unreachable_gateway_is_a_dependency_error() -> None:
    with pytest.raises(DependencyError, match=r"prometheus: http://127\.0\.0\.1:9"):
        PrometheusBackend("http://127.0.0.1:9", timeout=2).send(points_of("clicks", [shard("s-0", 1)], {}, SUMMARY))
