"""Which of a batch's changes change the table: each key's newest change of the batch against
what the table (a live row) and its tombstones (a delete) already hold for the key. Pure.

Contract of :func:`decide`:
- A change newer than what is held applies: an upsert *inserts* (no live row) or *updates*; a
  delete *deletes* (a time-to-live expiry is counted as *expired*), and leaves a tombstone.
- A change of the same order as what is held is the same change again: a *duplicate*. But a
  delete whose tombstone is held while the table still has an older row of its key is applied:
  an attempt wrote that tombstone and its merge did not land (it lost a race, or its run died).
- An older one is *ignored*: it never changes the table, even after a newer delete.
- Counts are by the shard the change came from.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kinesis_batch.changes.fold import DUPLICATES, INDEX, ranking, starts_of_keys, tally, with_columns
from kinesis_batch.changes.model import DELETE
from kinesis_batch.changes.ordering import compare, order_columns, position_width
from kinesis_batch.columns import (
    CHANGE_OP,
    CHANGE_POSITION,
    LINEAGE_DEPTH,
    SEQUENCE_NUMBER,
    SHARD_ID,
    SUB_SEQUENCE_NUMBER,
)

EXPIRE = "expire"  # a delete the source made by itself (DynamoDB's time to live)
INSERTED, UPDATED, DELETED, EXPIRED, IGNORED = "inserted", "updated", "deleted", "expired", "ignored"
#: What :func:`held` answers per key beside the key: its newest change's order, whether that
#: change left a live row, and whether the table has a row of the key (older than a tombstone,
#: it is one a delete has not removed yet).
ORDER_SOURCE = (CHANGE_POSITION.name, LINEAGE_DEPTH.name, SEQUENCE_NUMBER.name, SUB_SEQUENCE_NUMBER.name)
LIVE, HAS_ROW = "__live", "__has_row"
_HELD = "__held"  # a key's row in what is held


@dataclass(frozen=True)
class Decision:
    """``upserts``: rows to write (insert or replace their key's row); ``deletes``: changes
    whose key's row goes (and whose tombstone is kept); ``counts`` by shard."""

    upserts: pa.Table
    deletes: pa.Table
    counts: dict[str, Counter[str]]


def held(rows: pa.Table, tombstones: pa.Table, keys: pa.Table) -> pa.Table:
    """What the output holds for the keys of ``keys`` (the batch's key columns, whose types the
    answer's take), one row per key found among the table's ``rows`` and its ``tombstones``:
    the key, ORDER_SOURCE of its newest (a live row before a tombstone of the same order), LIVE
    and HAS_ROW."""
    key = keys.schema.names
    parts = [_typed(table, keys.schema, live) for table, live in ((rows, True), (tombstones, False)) if table.num_rows]
    if not parts:
        return _typed(keys.slice(0, 0), keys.schema, True).append_column(HAS_ROW, pa.array([], pa.bool_()))
    both = pa.concat_tables(parts)
    orders = order_columns(both, position_width(both))
    work = with_columns(both.select([*key, LIVE]), orders).append_column(
        INDEX, pa.array(range(both.num_rows), type=pa.int64())
    )
    ranked = work.take(pc.sort_indices(work, sort_keys=ranking(key, [*orders.schema.names, LIVE])))
    first = starts_of_keys(ranked, key)
    groups = pc.subtract(pc.cumulative_sum(first.cast(pa.int64())), 1)
    any_live = pa.table({"group": groups, LIVE: ranked.column(LIVE)}).group_by("group", use_threads=False)
    has_row = any_live.aggregate([(LIVE, "any")]).sort_by("group").column(f"{LIVE}_any")
    return both.take(pc.filter(ranked.column(INDEX), first)).append_column(HAS_ROW, has_row)


def decide(batch: pa.Table, key: Sequence[str], holding: pa.Table) -> Decision:
    """The batch's changes (one per key: kinesis_batch.changes.fold) that apply (module
    contract), against :func:`held`'s answer for its keys."""
    names = list(key)
    numbered = batch.select(names).append_column(INDEX, pa.array(range(batch.num_rows), type=pa.int64()))
    found_at = holding.select(names).append_column(_HELD, pa.array(range(holding.num_rows), type=pa.int64()))
    at = numbered.join(found_at, names, join_type="left outer", use_threads=False).sort_by(INDEX).column(_HELD)
    known = holding.take(at)  # a row of nulls where nothing is held
    found = pc.is_valid(at)
    width = position_width(batch, holding)
    versus = compare(order_columns(batch, width), order_columns(known, width))
    ops = batch.column(CHANGE_OP.name)
    deleting = pc.is_in(ops, value_set=pa.array([DELETE, EXPIRE]))
    equal = pc.and_(found, pc.equal(versus, 0))
    unfinished = _all(equal, deleting, pc.invert(_true(known, LIVE)), _true(known, HAS_ROW))
    skip = pc.and_(_all(found, pc.less_equal(versus, 0)), pc.invert(unfinished))
    outcome = pc.if_else(
        skip,
        pc.if_else(equal, DUPLICATES, IGNORED),
        pc.if_else(
            deleting,
            pc.if_else(pc.equal(ops, EXPIRE), EXPIRED, DELETED),
            pc.if_else(_all(found, _true(known, LIVE)), UPDATED, INSERTED),
        ),
    )
    applies = pc.invert(skip)
    upserts, deletes = pc.and_(applies, pc.invert(deleting)), pc.and_(applies, deleting)
    return Decision(batch.filter(upserts), batch.filter(deletes), tally(batch.column(SHARD_ID.name), outcome))


def _typed(table: pa.Table, keys: pa.Schema, live: bool) -> pa.Table:
    """``table``'s key (typed as ``keys``) and ORDER_SOURCE (no position: none), and LIVE."""
    schema = pa.schema([*keys, CHANGE_POSITION, LINEAGE_DEPTH, SEQUENCE_NUMBER, SUB_SEQUENCE_NUMBER])
    have = set(table.schema.names)
    columns = [
        table.column(f.name).cast(f.type) if f.name in have else pa.nulls(table.num_rows, f.type) for f in schema
    ]
    flags = pa.array([live] * table.num_rows, type=pa.bool_())
    return pa.table([*columns, flags], schema=schema.append(pa.field(LIVE, pa.bool_())))


def _true(table: pa.Table, name: str) -> pa.Array:
    return pc.fill_null(table.column(name), False)


def _all(*masks: pa.Array) -> pa.Array:
    result = masks[0]
    for mask in masks[1:]:
        result = pc.and_(result, mask)
    return pc.fill_null(result, False)


__all__ = [
    "DELETED",
    "EXPIRE",
    "EXPIRED",
    "HAS_ROW",
    "IGNORED",
    "INSERTED",
    "LIVE",
    "ORDER_SOURCE",
    "UPDATED",
    "Decision",
    "decide",
    "held",
]
