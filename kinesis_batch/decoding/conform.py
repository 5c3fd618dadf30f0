"""Stage 4: decoded (and transformed) rows fitted to the table's schema.

For every column: the table's type where it has the field (values that do not fit are rejected
with a reason; widening where the format allows it, :mod:`kinesis_batch.decoding.scalars`); a
new column for a new field with ``--schema-evolution add-columns`` (a new field is a reason to
reject with ``fail``); nulls where a row lacks a field. Nested objects and lists are fitted field
by field. A field only ever seen as null (or as an empty list or object) adds no column yet: no
format stores a type-less column, and its first value adds it.

The result is the rows in the schema the table has from now on (its fields in the table's order,
new ones after them), and which rows were rejected and why. Pure: arrays in, arrays out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kinesis_batch.decoding.scalars import Conflict, Fitted, Policy, changed, fit_scalar
from kinesis_batch.decoding.types import is_empty, is_list


@dataclass(frozen=True)
class Conformed:
    """``columns`` (by the table's field order) with ``schema``, the table's fields from now on;
    ``conflicts``: the rows that did not fit, in the rows' own order."""

    schema: pa.Schema
    columns: list[pa.Array]
    conflicts: tuple[Conflict, ...]


def conform(fields: pa.StructArray, table: pa.Schema, policy: Policy) -> Conformed:
    """Fit the decoded ``fields`` (one struct per row) to the ``table``'s fields."""
    fitted = fit(fields, pa.struct(list(table)), policy, "")
    kind = fitted.kind if fitted.kind is not None else pa.struct([])
    array = fitted.array if fitted.array is not None else pa.nulls(len(fields), kind)
    columns = array.flatten() if kind.num_fields else []
    return Conformed(pa.schema([kind.field(i) for i in range(kind.num_fields)]), columns, fitted.conflicts)


def align(columns: Sequence[pa.Array], schema: pa.Schema, table: pa.Schema) -> list[pa.Array]:
    """Rows already fitted to ``schema`` (an earlier state of ``table``: fields only added or
    widened since) in ``table``'s columns."""
    struct = pa.StructArray.from_arrays(list(columns), fields=list(schema)) if len(schema) else None
    if struct is None:
        size = len(columns[0]) if columns else 0
        return [pa.nulls(size, field.type) for field in table]
    fitted = fit(struct, pa.struct(list(table)), Policy(), "")
    assert fitted.array is not None and not fitted.conflicts, "fitting to a wider schema cannot fail"
    return list(fitted.array.flatten())


def fit(array: pa.Array, want: pa.DataType | None, policy: Policy, path: str) -> Fitted:
    """``array`` fitted to ``want`` (None: a field the table does not have)."""
    have = array.type
    if want is None:
        return _new(array, policy, path)
    if have == want:
        return Fitted(array, want)
    if pa.types.is_null(have):
        return Fitted(pa.nulls(len(array), want), want)
    if pa.types.is_struct(want):
        return _struct(array, want, policy, path) if pa.types.is_struct(have) else changed(array, want, path)
    if is_list(want):
        return _list(array, want, policy, path) if is_list(have) else changed(array, want, path)
    if pa.types.is_map(want):
        return _map(array, want, path)
    if pa.types.is_struct(have) or is_list(have) or pa.types.is_map(have):
        return changed(array, want, path)
    return fit_scalar(array, want, policy, path)


def _new(array: pa.Array, policy: Policy, path: str) -> Fitted:
    # No value left (the records that had one were rejected, or it only held null): no column.
    if is_empty(array.type) or array.null_count == len(array):
        return Fitted(None, None)
    if not policy.add_columns:
        present = array.is_valid()
        detail = f"{path} is not in the table (--schema-evolution fail)"
        return Fitted(None, None, (Conflict(present, "new field", detail),) if pc.any(present).as_py() else ())
    if pa.types.is_struct(array.type) or is_list(array.type):
        return fit(array, _shell(array.type), policy, path)  # drops the empty parts
    return Fitted(array, array.type)


def _shell(kind: pa.DataType) -> pa.DataType:
    """A nested type with nothing in it yet, for a new field to be fitted into (so that its
    empty parts are dropped and the rest added as new)."""
    return pa.struct([]) if pa.types.is_struct(kind) else pa.list_(pa.struct([]))


def _struct(array: pa.StructArray, want: pa.StructType, policy: Policy, path: str) -> Fitted:
    children = {array.type.field(i).name: child for i, child in enumerate(array.flatten())}
    fields: list[pa.Field] = []
    arrays: list[pa.Array] = []
    conflicts: list[Conflict] = []
    for field in (want.field(i) for i in range(want.num_fields)):
        child = children.pop(field.name, None)
        if child is None:
            fields.append(field)
            arrays.append(pa.nulls(len(array), field.type))
            continue
        fitted = fit(child, field.type, policy, _join(path, field.name))
        fields.append(pa.field(field.name, fitted.kind or field.type))
        arrays.append(fitted.array if fitted.array is not None else pa.nulls(len(array), field.type))
        conflicts.extend(fitted.conflicts)
    for name, child in children.items():  # fields the table does not have yet
        fitted = fit(child, None, policy, _join(path, name))
        conflicts.extend(fitted.conflicts)
        if fitted.kind is not None and fitted.array is not None:
            fields.append(pa.field(name, fitted.kind))
            arrays.append(fitted.array)
    if not fields:
        return Fitted(None, None, tuple(conflicts)) if not want.num_fields else Fitted(array, want)
    struct = pa.StructArray.from_arrays(arrays, fields=fields, mask=array.is_null())
    return Fitted(struct, struct.type, tuple(conflicts))


def _list(array: pa.Array, want: pa.DataType, policy: Policy, path: str) -> Fitted:
    items = pc.list_flatten(array)
    wanted_item = want.value_type
    fitted = fit(items, None if _is_shell(wanted_item) else wanted_item, policy, f"{path}[]")
    if fitted.kind is None or fitted.array is None:
        return Fitted(None, None, _to_rows(fitted.conflicts, array))
    lengths = pc.fill_null(pc.list_value_length(array), 0).cast(pa.int32())
    offsets = pa.array([0, *pc.cumulative_sum(lengths).to_pylist()], type=pa.int32())
    rebuilt = pa.ListArray.from_arrays(offsets, fitted.array, mask=array.is_null())
    return Fitted(rebuilt, rebuilt.type, _to_rows(fitted.conflicts, array))


def _is_shell(kind: pa.DataType) -> bool:
    return bool(pa.types.is_struct(kind) and kind.num_fields == 0)


def _to_rows(conflicts: tuple[Conflict, ...], array: pa.Array) -> tuple[Conflict, ...]:
    """Conflicts of a list's items as conflicts of the rows that hold them."""
    if not conflicts:
        return ()
    parents = pc.list_parent_indices(array)
    rows = []
    for conflict in conflicts:
        hit = pc.unique(pc.filter(parents, conflict.mask))
        mask = pc.is_in(pa.array(range(len(array)), type=parents.type), value_set=hit)
        rows.append(Conflict(mask, conflict.kind, conflict.detail))
    return tuple(rows)


def _map(array: pa.Array, want: pa.DataType, path: str) -> Fitted:
    """A map column: from a map, or from objects (JSON has no maps: an object's fields are its
    entries)."""
    try:
        if pa.types.is_struct(array.type):
            rows = array.to_pylist()
            entries = [None if row is None else [(k, v) for k, v in row.items() if v is not None] for row in rows]
            return Fitted(pa.array(entries, type=want), want)
        return Fitted(array.cast(want), want)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        return changed(array, want, path)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


__all__ = ["Conformed", "align", "conform", "fit"]
