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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kinesis_batch.changes.fold import DUPLICATES, keys_of, orders_of
from kinesis_batch.changes.model import DELETE, Order
from kinesis_batch.columns import CHANGE_OP, SHARD_ID

EXPIRE = "expire"  # a delete the source made by itself (DynamoDB's time to live)
INSERTED, UPDATED, DELETED, EXPIRED, IGNORED = "inserted", "updated", "deleted", "expired", "ignored"

#: What the output holds for a key: the order of its newest change, whether that change left a
#: live row, and whether the table has a row of the key (older than a tombstone, it is one a
#: delete has not removed yet).
Held = tuple[Order, bool, bool]


@dataclass(frozen=True)
class Decision:
    """``upserts``: rows to write (insert or replace their key's row); ``deletes``: changes
    whose key's row goes (and whose tombstone is kept); ``counts`` by shard."""

    upserts: pa.Table
    deletes: pa.Table
    counts: dict[str, Counter[str]]


def held(rows: pa.Table, tombstones: pa.Table, key: Sequence[str]) -> dict[tuple[Any, ...], Held]:
    """What the output holds for each key of ``rows`` (the table's) and ``tombstones``."""
    found: dict[tuple[Any, ...], Held] = {}
    for table, live in ((rows, True), (tombstones, False)):
        if table.num_rows == 0:
            continue
        for row_key, row_order in zip(keys_of(table, key), orders_of(table), strict=True):
            known = found.get(row_key)
            has_row = live or (known is not None and known[2])
            if known is None or row_order > known[0]:
                found[row_key] = (row_order, live, has_row)
            else:
                found[row_key] = (known[0], known[1], has_row)
    return found


def decide(batch: pa.Table, key: Sequence[str], holding: Mapping[tuple[Any, ...], Held]) -> Decision:
    """The batch's changes (one per key: kinesis_batch.changes.fold) that apply (module contract)."""
    ops = batch.column(CHANGE_OP.name).to_pylist()
    shards = batch.column(SHARD_ID.name).to_pylist()
    counts: dict[str, Counter[str]] = {}
    upserts: list[int] = []
    deletes: list[int] = []
    for index, (row_key, row_order) in enumerate(zip(keys_of(batch, key), orders_of(batch), strict=True)):
        known = holding.get(row_key)
        tally = counts.setdefault(shards[index], Counter())
        deleting = ops[index] in (DELETE, EXPIRE)
        unfinished = known is not None and row_order == known[0] and deleting and not known[1] and known[2]
        if known is not None and row_order <= known[0] and not unfinished:
            tally[DUPLICATES if row_order == known[0] else IGNORED] += 1
        elif deleting:
            deletes.append(index)
            tally[EXPIRED if ops[index] == EXPIRE else DELETED] += 1
        else:
            upserts.append(index)
            tally[UPDATED if known is not None and known[1] else INSERTED] += 1
    return Decision(_take(batch, upserts), _take(batch, deletes), counts)


def _take(table: pa.Table, indexes: list[int]) -> pa.Table:
    return table.take(pa.array(indexes, type=pa.int64()))


__all__ = ["DELETED", "EXPIRE", "EXPIRED", "IGNORED", "INSERTED", "UPDATED", "Decision", "decide", "held"]
