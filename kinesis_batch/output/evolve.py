"""A decoded table's schema as batches grow it (pure): the table's columns, then whatever the
batch's files add. New columns and new fields of nested objects are added (nullable, at the
end); a column widens from int32 to int64 or float32 to float64 where the format allows it.
Any other difference is a conflict: one line naming the column (the Spark tasks fitted every row
to the table as it was when the read began, so a conflict means another run changed the same
column meanwhile: the batch is not published, and the next run reads it again against the table)."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from kinesis_batch.errors import NOTHING_PUBLISHED, InvalidStateError

_WIDER = {(pa.int32(), pa.int64()), (pa.int16(), pa.int64()), (pa.int8(), pa.int64()), (pa.float32(), pa.float64())}


def normalized(kind: pa.DataType) -> pa.DataType:
    """A type as the tasks write it: the formats hand back large and view layouts of the same
    column types (large_string, string_view, large_list, ...)."""
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind):
        return pa.binary()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_list_view(kind):
        return pa.list_(normalized(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct(
            [pa.field(f.name, normalized(f.type)) for f in (kind.field(i) for i in range(kind.num_fields))]
        )
    if pa.types.is_map(kind):
        return pa.map_(normalized(kind.key_type), normalized(kind.item_type))
    if pa.types.is_timestamp(kind):
        return pa.timestamp("us", tz="UTC")
    return kind


def normalize(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(field.name, normalized(field.type)) for field in schema])


def merged(table: pa.Schema, files: Iterable[pa.Schema], *, widen: bool, where: str) -> pa.Schema:
    """``table`` grown by what ``files`` add; InvalidStateError on a conflict."""
    result = normalize(table)
    for schema in files:
        kind = _merge(pa.struct(list(result)), pa.struct(list(normalize(schema))), widen, where, "")
        result = pa.schema([kind.field(i) for i in range(kind.num_fields)])
    return result


def additions(table: pa.Schema, target: pa.Schema) -> list[pa.Field]:
    """The top-level fields of ``target`` that are new or changed against ``table`` (new columns,
    structs with new fields, widened columns)."""
    have = {field.name: normalized(field.type) for field in table}
    return [field for field in target if have.get(field.name) != field.type]


def conflicts(table: pa.Schema, declared: pa.Schema) -> list[str]:
    """Where a declared schema and an existing table disagree, each as a phrase."""
    have = {field.name: normalized(field.type) for field in table}
    found = []
    for field in normalize(declared):
        if field.name in have and have[field.name] != field.type and (have[field.name], field.type) not in _WIDER:
            found.append(f"{field.name} is {have[field.name]} in the table, {field.type} in the schema")
    return found


def _merge(table: pa.DataType, incoming: pa.DataType, widen: bool, where: str, path: str) -> pa.DataType:
    if table == incoming:
        return table
    if pa.types.is_struct(table) and pa.types.is_struct(incoming):
        fields = {table.field(i).name: table.field(i).type for i in range(table.num_fields)}
        for field in (incoming.field(i) for i in range(incoming.num_fields)):
            inner = f"{path}.{field.name}" if path else field.name
            fields[field.name] = (
                _merge(fields[field.name], field.type, widen, where, inner) if field.name in fields else field.type
            )
        return pa.struct(list(fields.items()))
    if pa.types.is_list(table) and pa.types.is_list(incoming):
        return pa.list_(_merge(table.value_type, incoming.value_type, widen, where, f"{path}[]"))
    if widen and (table, incoming) in _WIDER:
        return incoming
    if (incoming, table) in _WIDER:  # a file written before another run widened the column
        return table
    raise InvalidStateError(
        f"{where}: column {path} is {table} in the table and {incoming} in this batch's rows (another run changed "
        f"it meanwhile); {NOTHING_PUBLISHED}, and the next run reads these records again against the table as it is"
    )


__all__ = ["additions", "conflicts", "merged", "normalize", "normalized"]
