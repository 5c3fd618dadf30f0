"""AWS DMS's records on Kinesis::

    {"data": {...the row...},
     "metadata": {"timestamp": "2026-11-25T10:00:00.123456Z", "record-type": "data" | "control",
                  "operation": "load" | "insert" | "update" | "delete", "transaction-id": 123,
                  "schema-name": ..., "table-name": ...}}

A delete's ``data`` is the deleted row (its key among it). The order is the commit time, then
the transaction id (a full load's rows have none: 0). Control records (a table created, dropped,
changed) are counted and skipped. DMS does not say which columns are the key: ``--key`` does.
"""

from __future__ import annotations

from typing import Any

from kinesis_batch.changes.model import DELETE, UPSERT, EnvelopeError, Skipped, Unwrapped, to_datetime

OPERATIONS = {"load": UPSERT, "insert": UPSERT, "update": UPSERT, "delete": DELETE}


def unwrap(body: dict[str, Any] | None) -> Unwrapped | Skipped:
    body = body if body is not None else {}  # a null record: no metadata either
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        raise EnvelopeError("malformed envelope", "no metadata object (not an AWS DMS record)")
    kind = metadata.get("record-type")
    if kind == "control":
        return Skipped(f"control: {metadata.get('operation', 'unknown')}")
    operation = metadata.get("operation")
    op = OPERATIONS.get(operation) if isinstance(operation, str) else None
    data = body.get("data")
    if kind != "data" or op is None or not isinstance(data, dict):
        raise EnvelopeError(
            "malformed envelope",
            f"record-type {kind!r}, operation {operation!r}: expected data records of load, insert, update or delete",
        )
    moment = to_datetime(metadata.get("timestamp"))
    if moment is None:
        raise EnvelopeError("unparseable sequence", f"metadata.timestamp is {metadata.get('timestamp')!r}")
    transaction = metadata.get("transaction-id", 0) or 0
    if isinstance(transaction, bool) or not isinstance(transaction, int):
        raise EnvelopeError("unparseable sequence", f"metadata.transaction-id is {transaction!r}")
    micros = int(moment.timestamp()) * 1_000_000 + moment.microsecond
    return Unwrapped(op, dict(data), (micros, transaction))


__all__ = ["unwrap"]
