"""``--metrics cloudwatch``: PutMetricData under the namespace (default ``KinesisBatch``), the
run's points in as few calls as CloudWatch takes (one at the summary level)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from kinesis_batch.errors import from_botocore
from kinesis_batch.metrics.points import Point

PER_CALL = 1000  # PutMetricData's limit of metric data per request


class CloudWatchBackend:
    """``client``: a boto3 CloudWatch client (kinesis_batch.aws.cloudwatch_client)."""

    def __init__(self, client: Any, namespace: str) -> None:
        self.client, self.namespace = client, namespace

    def send(self, points: Sequence[Point]) -> None:
        now = datetime.now(UTC)
        data = [
            {
                "MetricName": p.name,
                "Dimensions": [{"Name": name, "Value": value} for name, value in p.dimensions],
                "Value": float(p.value),
                "Unit": p.unit,
                "Timestamp": now,
            }
            for p in points
        ]
        for first in range(0, len(data), PER_CALL):
            try:
                self.client.put_metric_data(Namespace=self.namespace, MetricData=data[first : first + PER_CALL])
            except (ClientError, BotoCoreError) as exc:
                raise from_botocore(exc, operation="PutMetricData", resource=self.namespace) from exc


__all__ = ["CloudWatchBackend"]
