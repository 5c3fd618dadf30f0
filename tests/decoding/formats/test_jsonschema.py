"""A JSON Schema as declared columns: every JSON Schema type a column can be, and a one-line
refusal naming the field for what no column type can hold."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch.decoding.formats.jsonschema import from_json_schema
from kinesis_batch.errors import IllegalArgumentError


def columns(properties: dict[str, Any], **more: Any) -> pa.Schema:
    return from_json_schema(json.dumps({"type": "object", "properties": properties, **more}), "s.json")


@pytest.mark.parametrize(
    ("field", "kind"),
    [
        ({"type": "string"}, pa.string()),
        ({"type": "string", "format": "date-time"}, pa.timestamp("us", tz="UTC")),
        ({"type": "string", "format": "date"}, pa.date32()),
        ({"type": "integer"}, pa.int64()),
        ({"type": "integer", "format": "int32"}, pa.int32()),
        ({"type": "number"}, pa.float64()),
        ({"type": "number", "format": "float"}, pa.float32()),
        ({"type": ["boolean", "null"]}, pa.bool_()),
        ({"type": "array", "items": {"type": "string"}}, pa.list_(pa.string())),
        ({"type": "object", "properties": {"id": {"type": "integer"}}}, pa.struct([("id", pa.int64())])),
        ({"type": "object", "additionalProperties": {"type": "number"}}, pa.map_(pa.string(), pa.float64())),
        ({"oneOf": [{"type": "null"}, {"type": "string"}]}, pa.string()),
        ({"$ref": "#/$defs/id"}, pa.int64()),
        ({"enum": ["a", "b"], "type": "string"}, pa.string()),
    ],
)
def test_each_type_becomes_its_column(field: dict[str, Any], kind: pa.DataType) -> None:
    assert columns({"f": field}, **{"$defs": {"id": {"type": "integer"}}}).field("f").type == kind


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "s.json is not JSON"),
        ('{"type": "object", "properties": {"f": {"type": ["string", "integer"]}}}', "field f has type"),
        ('{"type": "object", "properties": {"f": {"type": "object"}}}', "field f is an object without properties"),
        ('{"type": "object", "properties": {"f": {"$ref": "#/$defs/missing"}}}', "which the schema does not define"),
        ('{"type": "object", "properties": {"f": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"$ref": "#/$defs/n"}}}',
         "recursively"),
        ('{"type": "array", "items": {"type": "string"}}', "the top level must be an object"),
    ],
)  # fmt: skip
def test_what_has_no_column_type_is_refused_naming_the_field(text: str, says: str) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        from_json_schema(text, "s.json")
