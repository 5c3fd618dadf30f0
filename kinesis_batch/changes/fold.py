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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from kinesis_batch.changes.model import Order, order
from kinesis_batch.columns import CHANGE_POSITION, LINEAGE_DEPTH, SEQUENCE_NUMBER, SHARD_ID, SUB_SEQUENCE_NUMBER

DUPLICATES, SUPERSEDED = "duplicates", "superseded"


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
    whatever the other columns' types (a join would refuse list columns)."""
    wanted = set(keys_of(keys, key))
    return table.filter(pa.array([(found in wanted) == inside for found in keys_of(table, key)], type=pa.bool_()))


def orders_of(table: pa.Table) -> list[Order]:
    """Each row's order (the position column may be absent: Kinesis order only)."""
    names = table.schema.names
    positions = table.column(CHANGE_POSITION.name).to_pylist() if CHANGE_POSITION.name in names else None
    depths = table.column(LINEAGE_DEPTH.name).to_pylist()
    sequences = table.column(SEQUENCE_NUMBER.name).to_pylist()
    subs = table.column(SUB_SEQUENCE_NUMBER.name).to_pylist()
    return [order(positions[i] if positions else None, depths[i], sequences[i], subs[i]) for i in range(table.num_rows)]


def newest(table: pa.Table, key: Sequence[str]) -> Folded:
    """The newest change of each key in ``table`` (see the module's contract)."""
    if table.num_rows == 0:
        return Folded(table)
    orders = orders_of(table)
    best: dict[tuple[Any, ...], int] = {}
    for index, row_key in enumerate(keys_of(table, key)):
        held = best.get(row_key)
        if held is None or orders[index] > orders[held]:
            best[row_key] = index
    kept = sorted(best.values())
    if len(kept) == table.num_rows:
        return Folded(table)
    shards = table.column(SHARD_ID.name).to_pylist()
    keep = set(kept)
    winner_of = {index: best[row_key] for index, row_key in enumerate(keys_of(table, key))}
    dropped: dict[str, Counter[str]] = {}
    for index in range(table.num_rows):
        if index in keep:
            continue
        same = orders[index][0] and orders[index][0] == orders[winner_of[index]][0]
        dropped.setdefault(shards[index], Counter())[DUPLICATES if same else SUPERSEDED] += 1
    return Folded(table.take(pa.array(kept, type=pa.int64())), dropped)


__all__ = ["DUPLICATES", "SUPERSEDED", "Folded", "among", "keys_of", "newest", "orders_of"]
