"""``--metrics emf``: CloudWatch's Embedded Metric Format, one JSON line per set of dimensions
(one line per run at the summary level) on the run's stderr, which CloudWatch Logs (Lambda,
ECS's awslogs, the CloudWatch agent) turns into metrics for the price of a log line.

A line is ``{"_aws": {"Timestamp": ms, "CloudWatchMetrics": [{"Namespace": ..., "Dimensions":
[[names]], "Metrics": [{"Name": ..., "Unit": ...}]}]}, <dimension>: <value>, <metric>: <value>}``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from kinesis_batch.metrics.points import Point


def emf_lines(points: Sequence[Point], namespace: str, timestamp_ms: int) -> list[str]:
    """The EMF documents of ``points``, one per set of dimensions, in the points' order."""
    by_dimensions: dict[tuple[tuple[str, str], ...], list[Point]] = {}
    for point in points:
        by_dimensions.setdefault(point.dimensions, []).append(point)
    lines = []
    for dimensions, found in by_dimensions.items():
        directive = {
            "Namespace": namespace,
            "Dimensions": [[name for name, _ in dimensions]],
            "Metrics": [{"Name": p.name, "Unit": p.unit} for p in found],
        }
        body: dict[str, Any] = {"_aws": {"Timestamp": timestamp_ms, "CloudWatchMetrics": [directive]}}
        body |= dict(dimensions)
        body |= {p.name: p.value for p in found}
        lines.append(json.dumps(body, separators=(",", ":")))
    return lines


class EmfBackend:
    def __init__(self, namespace: str, write: Callable[[str], Any] | None = None) -> None:
        self.namespace = namespace
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))

    def send(self, points: Sequence[Point]) -> None:
        for line in emf_lines(points, self.namespace, int(time.time() * 1000)):
            self.write(line)


__all__ = ["EmfBackend", "emf_lines"]
