"""Avro records into Arrow rows, with the writer's own schema (a file, or each record's version
in the Glue Schema Registry), so no field is lost to a reader schema: a newer writer version's
new field becomes a new column.

Types: boolean, int (int32), long (int64), float (float32), double, string, bytes and fixed
(binary), enum (its symbol as text), record (struct), array (list), map (map from text), a union
of null and one type (that type). Logical types: decimal (decimal128), date, timestamp-millis
and -micros (UTC timestamps; the local-timestamp ones are read as UTC), uuid (text), time-millis
and -micros (an int64 of their unit: Delta has no time type). A union of several types, or a
recursive record, has no column type: refused at start, naming the field.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from kinesis_batch.decoding.decoded import Decoded, combine
from kinesis_batch.decoding.rejects import DECODE, Rejected
from kinesis_batch.errors import IllegalArgumentError

_PRIMITIVES = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
    "null": pa.null(),
}
_AS_PLAIN = {"uuid", "time-millis", "time-micros"}  # read as their underlying type (text, int)


class AvroSchema:
    """A writer schema: fastavro's parsed form and the Arrow type of its records."""

    def __init__(self, text: str, where: str) -> None:
        import fastavro

        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise IllegalArgumentError(f"{where} is not JSON: {exc}") from exc
        document = _plain(document)
        try:
            self.parsed = fastavro.parse_schema(document)
            self._reader = fastavro.schemaless_reader  # per record: looked up once
        except Exception as exc:  # fastavro raises SchemaParseException and plain ones alike
            raise IllegalArgumentError(f"{where} is not an Avro schema: {exc}") from exc
        self.kind = _Translator(where).kind(document, "")
        if not pa.types.is_struct(self.kind):
            raise IllegalArgumentError(f"{where}: the top level must be an Avro record (its fields are the columns)")
        self.name = str(document.get("name", "")) if isinstance(document, dict) else ""

    @property
    def fields(self) -> pa.Schema:
        return pa.schema([self.kind.field(i) for i in range(self.kind.num_fields)])

    def read(self, datum: bytes) -> Any:
        return self._reader(io.BytesIO(datum), self.parsed, None)


class AvroDecoder:
    """``schema_of(payload)``: the writer schema and the datum of one payload (a file's schema
    for every payload, or the registry's version named in its header), or a Rejected reason."""

    def __init__(self, schema_of: Callable[[bytes], tuple[AvroSchema, bytes] | Rejected]) -> None:
        self._schema_of = schema_of

    def learn(self, table: pa.Schema) -> None:
        """The writer schema types every field: the table adds nothing to decoding."""

    def written_routes(self, payloads: Sequence[bytes], path: tuple[str, ...]) -> list[list[Any] | None]:
        """None each: the writer schema types every value, whatever the table, so a record this
        decoder rejects it cannot read a route from either."""
        return [None] * len(payloads)

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        groups: dict[int, tuple[AvroSchema, list[Any], list[int]]] = {}
        rejects: list[Rejected] = []
        for position, payload in enumerate(payloads):
            found = self._schema_of(payload)
            if isinstance(found, Rejected):
                rejects.append(found.at(position))
                continue
            schema, datum = found
            try:
                row = schema.read(datum)
            except Exception as exc:  # fastavro's errors are plain ValueError/EOFError/... kinds
                rejects.append(Rejected(position, DECODE, "not Avro of its schema", _one_line(exc, schema)))
                continue
            _, rows, positions = groups.setdefault(id(schema), (schema, [], []))
            rows.append(row)
            positions.append(position)
        arrays = [(pa.array(rows, type=schema.kind), positions) for schema, rows, positions in groups.values()]
        return combine(arrays, rejects)


def _one_line(exc: BaseException, schema: AvroSchema) -> str:
    text = " ".join(str(exc).split())[:160] or type(exc).__name__
    return f"{schema.name or 'the schema'}: {text}"


def _plain(node: Any) -> Any:
    """The schema with the logical types read as their underlying type taken off."""
    if isinstance(node, dict):
        cleaned = {key: _plain(value) for key, value in node.items()}
        if cleaned.get("logicalType") in _AS_PLAIN:
            cleaned.pop("logicalType")
        return cleaned
    if isinstance(node, list):
        return [_plain(item) for item in node]
    return node


class _Translator:
    def __init__(self, where: str) -> None:
        self.where = where
        self.named: dict[str, Any] = {}
        self._open: set[str] = set()

    def kind(self, node: Any, path: str, namespace: str = "") -> pa.DataType:
        if isinstance(node, str):
            if node in _PRIMITIVES:
                return _PRIMITIVES[node]
            full = node if "." in node or not namespace else f"{namespace}.{node}"
            for name in (full, node):
                if name in self._open:
                    raise self._refuse(path, f"refers to record {name} inside itself, which has no column type")
                if name in self.named:
                    return self.named[name]
            raise self._refuse(path, f"refers to type {node}, which the schema does not define")
        if isinstance(node, list):
            kept = [option for option in node if option != "null"]
            if len(kept) != 1:
                raise self._refuse(path, "is a union of several types: one type (and null) per field, please")
            return self.kind(kept[0], path, namespace)
        if not isinstance(node, dict):
            raise self._refuse(path, "is not an Avro type")
        logical = _logical(node)
        if logical is not None:
            return logical
        kind = node.get("type")
        if kind == "record":
            return self._record(node, path, namespace)
        if kind == "enum":
            return self._name(node, namespace, pa.string())
        if kind == "fixed":
            return self._name(node, namespace, pa.binary())
        if kind == "array":
            return pa.list_(self.kind(node.get("items"), f"{path}[]", namespace))
        if kind == "map":
            return pa.map_(pa.string(), self.kind(node.get("values"), f"{path}.*", namespace))
        return self.kind(kind, path, namespace)

    def _record(self, node: dict[str, Any], path: str, namespace: str) -> pa.DataType:
        full = _full_name(node, namespace)
        inner = full.rpartition(".")[0]
        self._open.add(full)
        try:
            prefix = f"{path}." if path else ""
            fields = [(f["name"], self.kind(f["type"], f"{prefix}{f['name']}", inner)) for f in node.get("fields", [])]
        finally:
            self._open.discard(full)
        return self._name(node, namespace, pa.struct(fields))

    def _name(self, node: dict[str, Any], namespace: str, kind: pa.DataType) -> pa.DataType:
        full = _full_name(node, namespace)
        self.named[full] = kind
        self.named.setdefault(str(node.get("name")), kind)
        return kind

    def _refuse(self, path: str, what: str) -> IllegalArgumentError:
        return IllegalArgumentError(f"{self.where}: field {path or '(top level)'} {what}")


def _logical(node: dict[str, Any]) -> pa.DataType | None:
    logical = node.get("logicalType")
    if logical == "decimal":
        return pa.decimal128(int(node.get("precision", 38)), int(node.get("scale", 0)))
    if logical == "date":
        return pa.date32()
    if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"):
        return pa.timestamp("us", tz="UTC")
    return None


def _full_name(node: dict[str, Any], namespace: str) -> str:
    name = str(node.get("name"))
    space = node.get("namespace", namespace)
    return name if "." in name or not space else f"{space}.{name}"


__all__ = ["AvroDecoder", "AvroSchema"]
