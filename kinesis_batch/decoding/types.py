"""Arrow type arithmetic for decoded fields (pure): which types one column can hold, what is not
yet a type at all, and how a type reads in a one-line reason."""

from __future__ import annotations

import pyarrow as pa


def is_empty(kind: pa.DataType) -> bool:
    """A type with no storable content: null, a list of nulls, a struct of no (storable) fields.
    No table format stores it; such a field waits for its first value."""
    if pa.types.is_null(kind):
        return True
    if is_list(kind):
        return is_empty(kind.value_type)
    if pa.types.is_struct(kind):
        return all(is_empty(kind.field(i).type) for i in range(kind.num_fields))
    return False


def storable(kind: pa.DataType) -> pa.DataType | None:
    """``kind`` without its empty parts (None if nothing is left): what a table can hold."""
    if is_empty(kind):
        return None
    if pa.types.is_struct(kind):
        children = [
            pa.field(field.name, child)
            for field in (kind.field(i) for i in range(kind.num_fields))
            if (child := storable(field.type)) is not None
        ]
        return pa.struct(children)
    if is_list(kind):
        item = storable(kind.value_type)
        return pa.list_(item) if item is not None else None
    return kind


def unify(first: pa.DataType, second: pa.DataType) -> pa.DataType | None:
    """The type one column of both would have (as Arrow's own inference makes it: mixed integer
    and floating numbers become float64), or None when they cannot share a column."""
    # Only null joins any type: an empty list or object joins lists or objects only (below), or
    # a record of [] where the table has text would pass here and fail its conversion later.
    if first == second or pa.types.is_null(second):
        return first
    if pa.types.is_null(first):
        return second
    if _is_number(first) and _is_number(second):
        if pa.types.is_integer(first) and pa.types.is_integer(second):
            return pa.int64()
        return pa.float64()
    if pa.types.is_struct(first) and pa.types.is_struct(second):
        merged = {first.field(i).name: first.field(i).type for i in range(first.num_fields)}
        for field in (second.field(i) for i in range(second.num_fields)):
            if field.name in merged:
                both = unify(merged[field.name], field.type)
                if both is None:
                    return None
                merged[field.name] = both
            else:
                merged[field.name] = field.type
        return pa.struct(list(merged.items()))
    if is_list(first) and is_list(second):
        item = unify(first.value_type, second.value_type)
        return pa.list_(item) if item is not None else None
    if pa.types.is_timestamp(first) and pa.types.is_timestamp(second):
        return pa.timestamp("us", tz="UTC")
    if family(first) == family(second) != "other":
        return first
    return None


def family(kind: pa.DataType) -> str:
    """string, binary or other: types that differ only in their Arrow layout."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return "string"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind):
        return "binary"
    return "other"


def describe(kind: pa.DataType) -> str:
    """A type as a reason names it: ``int64``, ``string``, ``object``, ``list of string``."""
    if pa.types.is_struct(kind):
        return "object"
    if is_list(kind):
        return f"list of {describe(kind.value_type)}"
    if pa.types.is_map(kind):
        return "map"
    if family(kind) != "other":
        return family(kind)
    if pa.types.is_timestamp(kind):
        return "timestamp"
    return str(kind)


def _is_number(kind: pa.DataType) -> bool:
    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind))


def is_list(kind: pa.DataType) -> bool:
    return bool(pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_list_view(kind))


__all__ = ["describe", "family", "is_empty", "is_list", "storable", "unify"]
