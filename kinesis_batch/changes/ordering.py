"""The order of changes (kinesis_batch.changes.model's rule) as Arrow columns, so that a batch's
changes are sorted, grouped and compared in Arrow's kernels, with no Python object per row. Pure.

A table's *order columns* (:func:`order_columns`), compared left to right:
- one per element of the source's position (:data:`POSITION` 0, 1, ...): a shorter position is
  a prefix of a longer one and sorts before it, so a missing element is null and null is the
  smallest value (sort descending with nulls at the end; :func:`compare` says the same);
- the lineage depth, the sequence number, the sub-sequence number. Sequence numbers are
  integers of up to 129 digits, more than any Arrow integer or decimal holds: they are held as
  their digits left-padded with zeros to 129, and equal-width digit strings order exactly as the
  integers they write (never as text of different widths, where "9" > "10").
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from kinesis_batch.columns import CHANGE_POSITION, LINEAGE_DEPTH, SEQUENCE_NUMBER, SUB_SEQUENCE_NUMBER
from kinesis_batch.shards.model import MAX_SEQUENCE_DIGITS

POSITION = "__position_"  # + the element's index
DEPTH, SEQUENCE, SUB = "__depth", "__sequence", "__sub_sequence"


def position_width(*tables: pa.Table) -> int:
    """The longest position among the tables' rows (0: none has one)."""
    widths = [
        pc.max(pc.list_value_length(table.column(CHANGE_POSITION.name))).as_py() or 0
        for table in tables
        if CHANGE_POSITION.name in table.schema.names and table.num_rows
    ]
    return max(widths, default=0)


def order_columns(table: pa.Table, width: int) -> pa.Table:
    """``table``'s order columns, with ``width`` position columns (at least its own longest)."""
    columns: dict[str, pa.Array] = {}
    for index, element in enumerate(_position_elements(table, width)):
        columns[f"{POSITION}{index}"] = element
    columns[DEPTH] = table.column(LINEAGE_DEPTH.name).cast(pa.int64())
    columns[SEQUENCE] = pc.utf8_lpad(table.column(SEQUENCE_NUMBER.name).cast(pa.string()), MAX_SEQUENCE_DIGITS, "0")
    columns[SUB] = pc.fill_null(table.column(SUB_SEQUENCE_NUMBER.name).cast(pa.int64()), 0)
    return pa.table(columns)


def newest_first(names: Sequence[str]) -> list[tuple[str, str, str]]:
    """Sort keys that put the greatest order first (a missing position element is the least)."""
    return [(name, "descending", "at_end") for name in names]


def compare(left: pa.Table, right: pa.Table) -> pa.Array:
    """Row by row, -1, 0 or 1 as ``left``'s order is less than, equal to or greater than
    ``right``'s (two tables of the same order columns, of the same length)."""
    result = pa.array([0] * left.num_rows, type=pa.int8())
    for name in reversed(left.schema.names):
        a, b = left.column(name), right.column(name)
        a_null, b_null = pc.is_null(a), pc.is_null(b)
        less = pc.if_else(a_null, pc.invert(b_null), pc.and_(pc.invert(b_null), pc.fill_null(pc.less(a, b), False)))
        greater = pc.if_else(
            b_null, pc.invert(a_null), pc.and_(pc.invert(a_null), pc.fill_null(pc.greater(a, b), False))
        )
        result = pc.if_else(less, -1, pc.if_else(greater, 1, result)).cast(pa.int8())
    return result


def same_position(left: pa.Table, right: pa.Table) -> pa.Array:
    """Row by row, whether both have a source position and it is the same (one change sent
    twice, not a newer one)."""
    names = [name for name in left.schema.names if name.startswith(POSITION)]
    if not names:
        return pa.array([False] * left.num_rows, type=pa.bool_())
    same = pc.is_valid(left.column(names[0]))
    for name in names:
        a, b = left.column(name), right.column(name)
        equal = pc.fill_null(pc.equal(a, b), False)
        same = pc.and_(same, pc.or_(equal, pc.and_(pc.is_null(a), pc.is_null(b))))
    return same


def _position_elements(table: pa.Table, width: int) -> list[pa.Array]:
    if not width:
        return []
    if CHANGE_POSITION.name not in table.schema.names:
        return [pa.nulls(table.num_rows, pa.int64())] * width
    positions = table.column(CHANGE_POSITION.name).combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(positions), 0)
    flat = pc.list_flatten(positions).cast(pa.int64())  # a sliced array's values from its first offset
    offsets = pc.subtract(positions.offsets.slice(0, len(positions)), positions.offsets[0])
    elements = []
    for index in range(width):
        at = pc.if_else(pc.greater(lengths, index), pc.add(offsets, index), pa.scalar(None, pa.int32()))
        elements.append(flat.take(at))
    return elements


__all__ = [
    "DEPTH",
    "POSITION",
    "SEQUENCE",
    "SUB",
    "compare",
    "newest_first",
    "order_columns",
    "position_width",
    "same_position",
]
