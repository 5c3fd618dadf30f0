"""JSON pages read whole: pyarrow's JSON reader parses all of a page's records in one call,
about four times cheaper than a msgspec parse per record plus Arrow's conversion of the Python
objects it makes (benchmarks/README.md, "Reading what the bytes cost").

Contract: :func:`read_page` returns exactly the rows that the record-by-record way
(kinesis_batch.decoding.formats.json) makes of the same page once conformed to the table, or
None, and then that way runs. So it gives up on every page it might read otherwise:
- a record that is not one JSON object on one line (empty, an array, a line break inside it), or
  that msgspec does not take as JSON: pyarrow's reader also takes NaN, and objects one after
  another. msgspec checks each record without building anything (about 0.6 us a record);
- bytes that are not UTF-8 (pyarrow's reader keeps them in text columns), or arrays the reader
  makes malformed (of lists whose first item is null);
- a float column holding a number of 2**53 or more: an integer written there (past int64, or
  mixed with fractions) is rounded by pyarrow's reader, where the other way keeps it exact or
  rejects it;
- anything pyarrow's reader fails on: a value of another type than the table's or than the
  page's other records, a key given twice;
- a column it reads as a time (it makes timestamps of bare dates; the other way keeps text);
- a table time field whose text the time conversion does not read (that record is rejected).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

FieldPath = tuple[str, ...]
Convert = Callable[[object], object | None]

_VALID = msgspec.json.Decoder(msgspec.Raw)  # checks the JSON, builds nothing
EXACT = 2**53  # below it, every integer is exactly a float64
_UNREADABLE = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, pa.ArrowIndexError)


def read_page(
    payloads: Sequence[bytes], known: pa.StructType, times: Sequence[tuple[FieldPath, Convert]]
) -> pa.StructArray | None:
    """The page's records as one struct array, a row each in their order (``known``: the
    table's fields as JSON gives them; ``times``: its time fields and their conversion), or
    None where the record-by-record way must read it."""
    if not payloads or not all(_one_object(payload) for payload in payloads):
        return None
    page = b"\n".join(payloads)
    reading = pj.ReadOptions(use_threads=False, block_size=len(page) + 1)  # one block: lines never split
    parsing = pj.ParseOptions(explicit_schema=pa.schema(list(_explicit(known))), unexpected_field_behavior="infer")
    try:
        table = pj.read_json(io.BytesIO(page), read_options=reading, parse_options=parsing)
        if table.num_rows != len(payloads) or not all(_plain(field.type) for field in table.schema):
            return None
        columns = [column.combine_chunks() for column in table.columns]
        values = pa.StructArray.from_arrays(columns, fields=list(table.schema))
        # Also the text's UTF-8, which the reader does not check, and its own arrays: it makes
        # malformed ones of lists whose first item is null (seen with [null, false]).
        values.validate(full=True)
    except _UNREADABLE:
        return None
    if not _filled(values) or not _exact(values):
        return None
    for path, convert in times:
        values = _converted(values, path, convert)
        if values is None:
            return None
    return values


def _one_object(payload: bytes) -> bool:
    if b"\n" in payload or b"\r" in payload or payload.lstrip()[:1] != b"{":
        return False
    try:
        _VALID.decode(payload)
    except msgspec.DecodeError:
        return False
    return True


def _explicit(kind: pa.StructType) -> list[pa.Field]:
    """The table's fields as the page is read: integers as int64 and floats as float64 (the
    conform stage narrows them, as for the other way), times as the text they arrive as."""
    fields = []
    for field in (kind.field(i) for i in range(kind.num_fields)):
        read = _read_as(field.type)
        if read is not None:
            fields.append(pa.field(field.name, read))
    return fields


def _read_as(kind: pa.DataType) -> pa.DataType | None:
    if pa.types.is_struct(kind):
        return pa.struct(_explicit(kind))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        item = _read_as(kind.value_type)
        return pa.list_(item) if item is not None else None
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_string(kind):
        return pa.string()
    if pa.types.is_integer(kind):
        return pa.int64()
    if pa.types.is_floating(kind):
        return pa.float64()
    return pa.bool_() if pa.types.is_boolean(kind) else None  # else inferred


def _plain(kind: pa.DataType) -> bool:
    """Only types the other way's inference also makes (no timestamps)."""
    if pa.types.is_struct(kind):  # of no fields: the reader's arrays of them are malformed (seen with [{}])
        return kind.num_fields > 0 and all(_plain(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_list(kind):  # of nulls: conform fails on the reader's (seen with [null, null])
        return not pa.types.is_null(kind.value_type) and _plain(kind.value_type)
    return kind in (pa.null(), pa.bool_(), pa.int64(), pa.float64(), pa.string())


def _filled(values: pa.StructArray) -> bool:
    """Whether every list and object column in ``values``, at every depth, holds a value
    somewhere. The other way infers a column of only empty objects, empty lists or nulls as
    holding nothing, and lands it as null; this reader gives each row an object of nulls or an
    empty list."""
    nested = (column for column in _columns(values) if column is not values and _nested(column.type))
    return all(_holds(column) for column in nested)


def _exact(values: pa.StructArray) -> bool:
    """Whether every float in ``values`` is below :data:`EXACT` in magnitude."""
    floats = (c for c in _columns(values) if pa.types.is_floating(c.type) and c.null_count < len(c))
    return all(pc.max(pc.abs(column)).as_py() < EXACT for column in floats)


def _holds(array: pa.Array) -> bool:
    """Whether ``array`` has a value (not null) anywhere inside it."""
    return any(not _nested(c.type) and c.null_count < len(c) for c in _columns(array))


def _columns(array: pa.Array) -> Iterator[pa.Array]:
    """``array``, then its columns at every depth: a struct's fields as its rows see them (null
    where the object is), a list's items."""
    yield array
    if pa.types.is_struct(array.type):
        for child in array.flatten():
            yield from _columns(child)
    elif pa.types.is_list(array.type):
        yield from _columns(array.flatten())


def _nested(kind: pa.DataType) -> bool:
    return bool(pa.types.is_struct(kind) or pa.types.is_list(kind))


def _converted(values: pa.StructArray, path: FieldPath, convert: Convert) -> pa.StructArray | None:
    """``values`` with the text at ``path`` (through nested structs) converted as the other way
    converts it, each value alone; None if one does not convert."""
    names = [values.type.field(i).name for i in range(values.type.num_fields)]
    if path[0] not in names:
        return values
    child = values.field(path[0])
    if len(path) > 1:
        if not pa.types.is_struct(child.type):
            return None
        new = _converted(child, path[1:], convert)
    elif pa.types.is_null(child.type):
        new = child
    elif pa.types.is_string(child.type):
        texts = child.to_pylist()
        moments = [None if text is None else convert(text) for text in texts]
        if any(moment is None and text is not None for moment, text in zip(moments, texts, strict=True)):
            return None
        new = pa.array(moments)
    else:
        return None
    if new is None:
        return None
    children = [new if name == path[0] else values.field(name) for name in names]
    fields = [pa.field(name, child.type) for name, child in zip(names, children, strict=True)]
    return pa.StructArray.from_arrays(children, fields=fields, mask=values.is_null())


__all__ = ["read_page"]
