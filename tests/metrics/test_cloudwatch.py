"""``--metrics cloudwatch`` against moto's CloudWatch: PutMetricData under the namespace, read
back with GetMetricData; an endpoint that refuses is a DependencyError."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kinesis_batch.aws import cloudwatch_client
from kinesis_batch.errors import DependencyError
from kinesis_batch.metrics.cloudwatch import CloudWatchBackend
from kinesis_batch.metrics.points import points_of
from kinesis_batch.metrics.settings import SUMMARY
from tests.metrics.support import TIMINGS, shard

pytestmark = pytest.mark.usefixtures("stack")


def sums(client: object, namespace: str, names: list[str], stream: str = "clicks") -> dict[str, float]:
    """Each metric's sum over the last hour, for ``stream``."""
    now = datetime.now(UTC)
    queries = [
        {
            "Id": f"m{i}",
            "MetricStat": {
                "Metric": {
                    "Namespace": namespace,
                    "MetricName": name,
                    "Dimensions": [{"Name": "Stream", "Value": stream}],
                },
                "Period": 60,
                "Stat": "Sum",
            },
        }
        for i, name in enumerate(names)
    ]
    found = client.get_metric_data(  # type: ignore[attr-defined]
        MetricDataQueries=queries, StartTime=now - timedelta(hours=1), EndTime=now + timedelta(minutes=5)
    )
    return {names[int(r["Id"][1:])]: sum(r["Values"]) for r in found["MetricDataResults"]}


def test_the_runs_points_are_put_under_the_namespace_and_read_back() -> None:
    client = cloudwatch_client()
    points = points_of("clicks", [shard("s-0", 10, rows=12), shard("s-1", 5, rows=5)], TIMINGS, SUMMARY)
    CloudWatchBackend(client, "KinesisBatchTest").send(points)
    assert sums(client, "KinesisBatchTest", ["RecordsProcessed", "RowsWritten", "ReadSeconds"]) == {
        "RecordsProcessed": 15.0,
        "RowsWritten": 17.0,
        "ReadSeconds": 3.5,
    }


def test_an_unreachable_endpoint_is_a_dependency_error() -> None:
    client = cloudwatch_client(endpoint_url="http://127.0.0.1:9")
    with pytest.raises(DependencyError):
        CloudWatchBackend(client, "KinesisBatch").send(points_of("clicks", [shard("s-0", 1)], {}, SUMMARY))
