"""The built-in transforms, by name (``--transform NAME``).

``cloudwatch-logs``: CloudWatch Logs subscription payloads (gzip'd JSON, so ``--decode json``
with the default ``--decompress auto``) into one row per log event: ``owner``, ``log_group``,
``log_stream``, ``subscription_filters``, then the event's ``id``, ``timestamp`` (a UTC
timestamp of its epoch milliseconds) and ``message``. Control messages (CloudWatch checking that
the stream is reachable) are not data: they make no row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kinesis_batch.columns import TRANSFORM_INPUT

_ENVELOPE = {"owner": "owner", "logGroup": "log_group", "logStream": "log_stream"}
_EVENT = {"id": pa.string(), "timestamp": pa.int64(), "message": pa.string()}


def cloudwatch_logs(batch: pa.RecordBatch) -> pa.RecordBatch:
    """One row per log event of the DATA_MESSAGE records of ``batch``."""
    if "messageType" not in batch.schema.names or "logEvents" not in batch.schema.names:
        raise TypeError("not a CloudWatch Logs subscription payload: no messageType and logEvents")
    data = batch.filter(pc.fill_null(pc.equal(batch.column("messageType"), "DATA_MESSAGE"), False))
    events = data.column("logEvents")
    parents = pc.list_parent_indices(events)
    flat = pc.list_flatten(events)
    columns: dict[str, pa.Array] = {name: data.column(name).take(parents) for name in TRANSFORM_INPUT}
    for source, target in _ENVELOPE.items():
        columns[target] = _column(data, source, pa.string()).take(parents)
    columns["subscription_filters"] = _column(data, "subscriptionFilters", pa.list_(pa.string())).take(parents)
    for name, kind in _EVENT.items():
        columns[name] = _field(flat, name, kind)
    columns["timestamp"] = pc.multiply(columns["timestamp"], 1000).cast(pa.timestamp("us", tz="UTC"))
    return pa.RecordBatch.from_pydict(columns)


def _column(batch: pa.RecordBatch, name: str, kind: pa.DataType) -> pa.Array:
    if name not in batch.schema.names:
        return pa.nulls(batch.num_rows, kind)
    column = batch.column(name)
    return column if column.type == kind else column.cast(kind)


def _field(events: pa.Array, name: str, kind: pa.DataType) -> pa.Array:
    if not pa.types.is_struct(events.type) or events.type.get_field_index(name) < 0:
        return pa.nulls(len(events), kind)
    value = pc.struct_field(events, name)
    return value if value.type == kind else value.cast(kind)


BUILTINS: dict[str, Callable[[pa.RecordBatch], Any]] = {"cloudwatch-logs": cloudwatch_logs}

__all__ = ["BUILTINS", "cloudwatch_logs"]
