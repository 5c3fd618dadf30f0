"""A JSON Schema (what JSON producers already write and register: the Glue Schema Registry's and
Confluent's JSON format) as the table's declared fields.

The top level is an object whose ``properties`` are the columns. Types: ``string`` (with
``format: date-time`` a timestamp, ``date`` a date), ``integer`` (int64; ``format: int32``
int32), ``number`` (float64; ``format: float`` float32), ``boolean``, ``array`` of ``items``,
``object`` with ``properties`` (a struct) or with only ``additionalProperties`` (a map from
text). A ``null`` among the types, ``required``, ``enum`` and descriptions change nothing:
every column may be null. ``$ref`` to ``#/definitions/...`` or ``#/$defs/...`` is followed;
``oneOf``/``anyOf`` of one type and ``null`` is that type. Anything else is refused at start,
in one line naming the field.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from kinesis_batch.errors import IllegalArgumentError

_SCALARS = {
    ("string", "date-time"): pa.timestamp("us", tz="UTC"),
    ("string", "date"): pa.date32(),
    ("integer", "int32"): pa.int32(),
    ("number", "float"): pa.float32(),
    ("string", None): pa.string(),
    ("integer", None): pa.int64(),
    ("number", None): pa.float64(),
    ("boolean", None): pa.bool_(),
}


def from_json_schema(text: str, where: str) -> pa.Schema:
    """The columns a JSON Schema (its text) declares; IllegalArgumentError naming ``where``."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IllegalArgumentError(f"{where} is not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise IllegalArgumentError(f"{where} is not a JSON Schema object")
    root = _Translator(document, where)
    kind = root.kind(document, "")
    if not pa.types.is_struct(kind) or kind.num_fields == 0:
        raise IllegalArgumentError(f"{where}: the top level must be an object with properties (the columns)")
    return pa.schema([kind.field(i) for i in range(kind.num_fields)])


class _Translator:
    def __init__(self, document: dict[str, Any], where: str) -> None:
        self.document = document
        self.where = where
        self._following: set[str] = set()

    def kind(self, node: Any, path: str) -> pa.DataType:
        if not isinstance(node, dict):
            raise self._refuse(path, "is not a schema object")
        if "$ref" in node:
            return self._ref(node["$ref"], path)
        for combinator in ("oneOf", "anyOf"):
            if combinator in node:
                return self._one_of(node[combinator], path)
        types = node.get("type")
        names = [types] if isinstance(types, str) else list(types or [])
        names = [name for name in names if name != "null"]
        if not names and "properties" in node:
            names = ["object"]
        if len(names) != 1:
            raise self._refuse(path, f"has type {types!r}: one type (and null) per field, please")
        name = names[0]
        if name == "object":
            return self._object(node, path)
        if name == "array":
            if "items" not in node:
                raise self._refuse(path, "is an array without items")
            return pa.list_(self.kind(node["items"], f"{path}[]"))
        scalar = _SCALARS.get((name, node.get("format"))) or _SCALARS.get((name, None))
        if scalar is None:
            raise self._refuse(path, f"has type {name!r}, which has no column type")
        return scalar

    def _object(self, node: dict[str, Any], path: str) -> pa.DataType:
        properties = node.get("properties")
        if properties:
            if not isinstance(properties, dict):
                raise self._refuse(path, "has properties that are not an object")
            prefix = f"{path}." if path else ""
            return pa.struct([(name, self.kind(child, f"{prefix}{name}")) for name, child in properties.items()])
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            return pa.map_(pa.string(), self.kind(extra, f"{path}.*"))
        if not path:
            return pa.struct([])
        raise self._refuse(path, "is an object without properties: give them, or additionalProperties' schema")

    def _one_of(self, options: Any, path: str) -> pa.DataType:
        kept = [option for option in options or [] if not (isinstance(option, dict) and option.get("type") == "null")]
        if len(kept) != 1:
            raise self._refuse(path, "has oneOf/anyOf of several types: one type (and null) per field, please")
        return self.kind(kept[0], path)

    def _ref(self, ref: str, path: str) -> pa.DataType:
        if not ref.startswith(("#/definitions/", "#/$defs/")):
            raise self._refuse(path, f"refers to {ref}: only #/definitions/... and #/$defs/... are followed")
        if ref in self._following:
            raise self._refuse(path, f"refers to {ref} recursively, which has no column type")
        section, _, name = ref[2:].partition("/")
        target = self.document.get(section, {}).get(name)
        if target is None:
            raise self._refuse(path, f"refers to {ref}, which the schema does not define")
        self._following.add(ref)
        try:
            return self.kind(target, path)
        finally:
            self._following.discard(ref)

    def _refuse(self, path: str, what: str) -> IllegalArgumentError:
        return IllegalArgumentError(f"{self.where}: field {path or '(top level)'} {what}")


__all__ = ["from_json_schema"]
