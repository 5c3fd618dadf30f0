"""The cloudwatch-logs built-in over real-shaped subscription payloads (gzip'd JSON): one row
per log event with its group, stream and owner; control messages make no row."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from typing import Any

from kinesis_batch.decoding.pipeline import Pipeline
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.shards.model import Record


def subscription(events: list[tuple[str, int, str]], *, group: str = "/aws/lambda/orders") -> dict[str, Any]:
    """What CloudWatch Logs puts on a Kinesis stream for a subscription filter."""
    return {
        "messageType": "DATA_MESSAGE",
        "owner": "123456789012",
        "logGroup": group,
        "logStream": "2026/11/25/[$LATEST]0f1e2d3c4b5a",
        "subscriptionFilters": ["to-kinesis"],
        "logEvents": [{"id": i, "timestamp": t, "message": m} for i, t, m in events],
    }


CONTROL = {
    "messageType": "CONTROL_MESSAGE",
    "owner": "CloudwatchLogs",
    "logGroup": "",
    "logStream": "",
    "subscriptionFilters": [],
    "logEvents": [
        {"id": "", "timestamp": 1795600800000, "message": "CWL CONTROL MESSAGE: Checking health of destination"}
    ],
}


def record(position: int, body: dict[str, Any]) -> Record:
    at = datetime(2026, 11, 25, 10, tzinfo=UTC)
    return Record("shardId-0", str(1000 + position), 0, "k", gzip.compress(json.dumps(body).encode()), at)


def test_each_log_event_is_a_row_and_control_messages_are_not_data() -> None:
    events = [
        ("38209870000000000000000000000000000000000000000000000000", 1795600800000, "START RequestId: 1"),
        ("38209870000000000000000000000000000000000000000000000001", 1795600800250, "order 17 shipped"),
    ]
    settings = DecodeSettings(decode="json", transform="cloudwatch-logs")
    pipeline = Pipeline(DecodeSpec(settings), shard_id="shardId-0", depth=0, batch_id="b")
    done = pipeline.page([record(0, subscription(events)), record(1, CONTROL), record(2, subscription(events[1:]))])
    assert done.rows is not None and done.dead is None
    rows = done.rows.to_pylist()
    assert [(r["sequence_number"], r["record_index"]) for r in rows] == [("1000", 0), ("1000", 1), ("1002", 0)]
    first = rows[1]
    assert (first["log_group"], first["owner"], first["message"]) == (
        "/aws/lambda/orders",
        "123456789012",
        "order 17 shipped",
    )
    assert first["timestamp"] == datetime(2026, 11, 25, 10, 0, 0, 250000, tzinfo=UTC)
    assert first["subscription_filters"] == ["to-kinesis"] and first["batch_id"] == "b"
    assert pipeline.counts.to_json() == {"records": 3, "rows": 3, "dead_letters": 0, "filtered": 1, "reasons": {}}
