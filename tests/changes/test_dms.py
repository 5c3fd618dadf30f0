"""AWS DMS's records on Kinesis, shaped as its documentation for a Kinesis target shows them."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.changes import dms
from kinesis_batch.changes.model import DELETE, UPSERT, EnvelopeError, Skipped


def record(operation: str, kind: str = "data", **metadata: Any) -> dict[str, Any]:
    return {
        "data": {"id": 7, "name": "seven"},
        "metadata": {
            "timestamp": "2026-11-25T10:00:00.123456Z",
            "record-type": kind,
            "operation": operation,
            "partition-key-type": "primary-key",
            "schema-name": "public",
            "table-name": "items",
            "transaction-id": 8633730840,
            **metadata,
        },
    }


@pytest.mark.parametrize(
    ("operation", "op"), [("load", UPSERT), ("insert", UPSERT), ("update", UPSERT), ("delete", DELETE)]
)
def test_each_operation_is_an_upsert_or_a_delete_of_the_data(operation: str, op: str) -> None:
    change = dms.unwrap(record(operation))
    assert not isinstance(change, Skipped)
    assert (change.op, change.image) == (op, {"id": 7, "name": "seven"})


def test_the_order_is_the_commit_time_then_the_transaction() -> None:
    change = dms.unwrap(record("update"))
    assert not isinstance(change, Skipped)
    assert change.position == (1795600800123456, 8633730840)
    load = dms.unwrap(record("load", **{"transaction-id": None}))
    assert not isinstance(load, Skipped) and load.position == (1795600800123456, 0)


@pytest.mark.parametrize("operation", ["create-table", "drop-table", "add-column", "column-type-change"])
def test_control_records_are_skipped_not_dead_letters(operation: str) -> None:
    assert dms.unwrap(record(operation, kind="control")) == Skipped(f"control: {operation}")


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"data": {}}, "malformed envelope"),
        (record("merge"), "malformed envelope"),
        (record("insert", timestamp="not a time"), "unparseable sequence"),
        (record("insert", **{"transaction-id": "x"}), "unparseable sequence"),
    ],
)
def test_malformed_records_are_refused_with_their_reason(body: dict[str, Any], kind: str) -> None:
    with pytest.raises(EnvelopeError) as raised:
        dms.unwrap(body)
    assert raised.value.kind == kind
