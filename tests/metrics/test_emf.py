"""``--metrics emf``: each line is a CloudWatch Embedded Metric Format document, checked against
the format's rules: an ``_aws`` object with a millisecond ``Timestamp`` and ``CloudWatchMetrics``
directives, each naming a namespace, dimension sets whose every name is a text member of the
document, and metrics (at most 100) whose every name is a number member with a CloudWatch unit."""

from __future__ import annotations

import json
from typing import Any

from kinesis_batch.metrics.emf import EmfBackend, emf_lines
from kinesis_batch.metrics.points import points_of
from kinesis_batch.metrics.settings import DETAILED, SUMMARY
from tests.metrics.support import TIMINGS, shard

UNITS = {"Seconds", "Milliseconds", "Bytes", "Count", "None"}  # those we use, of CloudWatch's StandardUnit


def assert_emf(line: str) -> dict[str, Any]:
    document = json.loads(line)
    meta = document["_aws"]
    assert isinstance(meta["Timestamp"], int) and meta["Timestamp"] > 1_700_000_000_000
    for directive in meta["CloudWatchMetrics"]:
        assert isinstance(directive["Namespace"], str) and 0 < len(directive["Namespace"]) <= 255
        for dimensions in directive["Dimensions"]:
            assert 0 < len(dimensions) <= 30
            assert all(isinstance(document[name], str) for name in dimensions)
        assert 0 < len(directive["Metrics"]) <= 100
        for metric in directive["Metrics"]:
            assert isinstance(document[metric["Name"]], int | float) and metric["Unit"] in UNITS
    return dict(document)


def test_a_summary_is_one_line_per_run_in_the_namespace() -> None:
    lines = emf_lines(points_of("clicks", [shard("s-0", 10)], TIMINGS, SUMMARY), "KinesisBatch", 1_795_000_000_000)
    assert len(lines) == 1 and "\n" not in lines[0]
    document = assert_emf(lines[0])
    assert document["Stream"] == "clicks" and document["RecordsProcessed"] == 10
    assert document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Stream"]]


def test_the_detailed_level_adds_a_line_per_shard_and_the_backend_writes_them() -> None:
    written: list[str] = []
    points = points_of("clicks", [shard("s-0", 10), shard("s-1", 3)], TIMINGS, DETAILED)
    EmfBackend("Team/Streams", written.append).send(points)
    documents = [assert_emf(line) for line in written]
    assert [d.get("ShardId") for d in documents] == [None, "s-0", "s-1"]
    assert documents[2]["RecordsProcessed"] == 3 and documents[2]["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [
        ["Stream", "ShardId"]
    ]
