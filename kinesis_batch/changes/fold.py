"""Collapsing a key's changes to its newest: within a page in the Spark tasks, and across the
batch's shards at publish. Pure: tables in, tables and counts out.

Contract of :func:`newest`:
- One row per key survives: the one of the greatest order (kinesis_batch.changes.model.order).
- A dropped change with the same source position as the kept one is a *duplicate* (the source
  sent it twice); any other dropped change is *superseded*. Both are counted by the shard the
  dropped change came from.
- The kept rows stay in their input order; the same input gives the same output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kinesis_batch.changes.ordering import newest_first, order_columns, position_width, same_position
from kinesis_batch.columns import SHARD_ID

DUPLICATES, SUPERSEDED = "duplicates", "superseded"
INDEX = "__index"  # a row's place in its input
FILTERED_ROWS = 262_144  # rows of a scan that kept_among holds at once


@dataclass(frozen=True)
class Folded:
    """The surviving rows, and per shard how many were dropped (``{shard: {kind: count}}``)."""

    rows: pa.Table
    dropped: dict[str, Counter[str]] = field(default_factory=dict)


def keys_of(table: pa.Table, key: Sequence[str]) -> list[tuple[Any, ...]]:
    """Each row's key as a tuple of Python values."""
    columns = [table.column(name).to_pylist() for name in key]
    return list(zip(*columns, strict=True)) if columns else [() for _ in range(table.num_rows)]


def among(table: pa.Table, keys: pa.Table, key: Sequence[str], *, inside: bool = True) -> pa.Table:
    """The rows of ``table`` whose key is one of ``keys``' (``inside`` False: is none of them),
    in their order, whatever the other columns' types (a join would refuse list columns)."""
    names = list(key)
    numbered = table.select(names).append_column(INDEX, pa.array(range(table.num_rows), type=pa.int64()))
    wanted = keys.select(names).cast(numbered.select(names).schema).group_by(names).aggregate([])
    found = numbered.join(wanted, names, join_type="left semi" if inside else "left anti", use_threads=False)
    at = found.column(INDEX)
    return table.take(at.take(pc.sort_indices(at)))


def kept_among(pages: Iterable[pa.RecordBatch], schema: pa.Schema, column: str, values: pa.Array) -> pa.Table:
    """The rows of ``pages`` whose ``column`` is one of ``values``, in their order. Filtered
    FILTERED_ROWS at a time, not page by page: ``is_in`` builds its set of ``values`` on every
    call, and a scan's pages are small (8,192 rows), so page by page 45,000 keys among 4,000,000
    rows cost more than the scan itself (0.4 s of 0.47)."""
    kept: list[pa.Table] = []
    held: list[pa.RecordBatch] = []
    rows = 0
    for page in pages:
        held.append(page)
        rows += page.num_rows
        if rows >= FILTERED_ROWS:
            kept.append(_filtered(pa.Table.from_batches(held, schema=schema), column, values))
            held, rows = [], 0
    if held:
        kept.append(_filtered(pa.Table.from_batches(held, schema=schema), column, values))
    return pa.concat_tables(kept) if kept else schema.empty_table()


def _filtered(table: pa.Table, column: str, values: pa.Array) -> pa.Table:
    return table.filter(pc.is_in(table.column(column), value_set=values))


def newest(table: pa.Table, key: Sequence[str]) -> Folded:
    """The newest change of each key in ``table`` (see the module's contract)."""
    if table.num_rows == 0:
        return Folded(table)
    orders = order_columns(table, position_width(table))
    work = with_columns(table.select(list(key)), orders).append_column(
        INDEX, pa.array(range(table.num_rows), type=pa.int64())
    )
    ranked = work.take(pc.sort_indices(work, sort_keys=ranking(key, orders.schema.names)))
    first = starts_of_keys(ranked, key)
    if pc.all(first).as_py():
        return Folded(table)
    kept = pc.filter(ranked.column(INDEX), first)
    kept = kept.take(pc.sort_indices(kept))  # in their input order
    winners = pc.subtract(pc.cumulative_sum(first.cast(pa.int64())), 1)
    winner_rows = pc.indices_nonzero(first).take(winners)
    ranked_orders = ranked.select(orders.schema.names)
    duplicate = same_position(ranked_orders, ranked_orders.take(winner_rows))
    shards = table.column(SHARD_ID.name).take(ranked.column(INDEX))
    dropped = tally(shards, pc.if_else(duplicate, DUPLICATES, SUPERSEDED), pc.invert(first))
    return Folded(table.take(kept), dropped)


def tally(shards: pa.Array, kinds: pa.Array, where: pa.Array | None = None) -> dict[str, Counter[str]]:
    """How many rows of each kind each shard has (of the rows ``where`` is true)."""
    counted = pa.table({"shard": shards, "kind": kinds})
    if where is not None:
        counted = counted.filter(where)
    found: dict[str, Counter[str]] = {}
    for row in counted.group_by(["shard", "kind"]).aggregate([([], "count_all")]).to_pylist():
        found.setdefault(row["shard"], Counter())[row["kind"]] = row["count_all"]
    return found


def starts_of_keys(ranked: pa.Table, key: Sequence[str]) -> pa.Array:
    """Of a table sorted by its ``key`` columns, whether each row is its key's first."""
    if ranked.num_rows == 0:
        return pa.array([], type=pa.bool_())
    differs = pa.array([False] * (ranked.num_rows - 1), type=pa.bool_())
    for name in key:
        column = ranked.column(name)
        differs = pc.or_(
            differs, pc.fill_null(pc.not_equal(column.slice(1), column.slice(0, ranked.num_rows - 1)), True)
        )
    return pa.concat_arrays([pa.array([True]), pa.chunked_array(differs).combine_chunks()])


def ranking(key: Sequence[str], greatest_first: Sequence[str]) -> list[tuple[str, str, str]]:
    """Sort keys that put each key's rows together, the greatest (by ``greatest_first``) first,
    and the earliest (by INDEX) of equals first."""
    return (
        [(name, "ascending", "at_end") for name in key]
        + newest_first(greatest_first)
        + [(INDEX, "ascending", "at_end")]
    )


def with_columns(table: pa.Table, more: pa.Table) -> pa.Table:
    for name in more.schema.names:
        table = table.append_column(name, more.column(name))
    return table


__all__ = [
    "DUPLICATES",
    "SUPERSEDED",
    "Folded",
    "among",
    "kept_among",
    "keys_of",
    "newest",
    "starts_of_keys",
    "tally",
    "with_columns",
]
