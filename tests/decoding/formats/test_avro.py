"""Avro records with the writer's own schema: each Avro type as its column type, records that do
not read as their schema rejected, and schemas that have no column type refused at start."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch.decoding.formats.avro import AvroDecoder, AvroSchema
from kinesis_batch.errors import IllegalArgumentError
from tests.decoding.support import avro_datum

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "int"},
        {"name": "price", "type": "float"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "ship", "type": {"type": "record", "name": "Address", "fields": [{"name": "city", "type": "string"}]}},
        {"name": "bill", "type": ["null", "Address"], "default": None},
    ],
}
VALUE = {
    "id": 2**40, "qty": 3, "price": 1.5, "note": None, "at": datetime(2026, 11, 25, 10, tzinfo=UTC),
    "day": date(2026, 11, 25), "amount": Decimal("12.34"), "ref": "0a1b2c3d-0000-0000-0000-000000000000",
    "kind": "B", "tags": ["x"], "attrs": {"k": 1}, "ship": {"city": "Lyon"}, "bill": {"city": "Paris"},
}  # fmt: skip


def test_every_avro_type_is_its_column_type_and_a_record_reads_as_its_schema() -> None:
    schema = AvroSchema(json.dumps(ORDER), "order.avsc")
    kinds = {field.name: field.type for field in schema.fields}
    assert kinds == {
        "id": pa.int64(), "qty": pa.int32(), "price": pa.float32(), "note": pa.string(),
        "at": pa.timestamp("us", tz="UTC"), "day": pa.date32(), "amount": pa.decimal128(10, 2),
        "ref": pa.string(), "kind": pa.string(), "tags": pa.list_(pa.string()),
        "attrs": pa.map_(pa.string(), pa.int64()), "ship": pa.struct([("city", pa.string())]),
        "bill": pa.struct([("city", pa.string())]),
    }  # fmt: skip
    decoded = AvroDecoder(lambda payload: (schema, payload)).decode([avro_datum(ORDER, VALUE), b"\x01"])
    (row,) = decoded.values.to_pylist()
    assert row["id"] == 2**40 and row["at"] == VALUE["at"] and row["amount"] == Decimal("12.34")
    assert row["attrs"] == [("k", 1)] and row["bill"] == {"city": "Paris"} and row["kind"] == "B"
    (reject,) = decoded.rejects
    assert (reject.position, reject.kind) == (1, "not Avro of its schema")


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"type": "record", "name": "R", "fields": [{"name": "u", "type": ["string", "long"]}]}, "field u is a union"),
        ({"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}, "inside itself"),
        ({"type": "array", "items": "string"}, "the top level must be an Avro record"),
        ({"type": "record", "name": "R", "fields": [{"name": "x", "type": "Nope"}]}, "not an Avro schema"),
    ],
)
def test_a_schema_without_column_types_is_refused_naming_the_field(schema: dict[str, Any], says: str) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        AvroSchema(json.dumps(schema), "s.avsc")
