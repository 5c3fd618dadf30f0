"""Choosing the changes newer than what the table and its tombstones hold: tables of cases, and
random batches against a decision written in plain Python."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch.changes.apply import decide, held
from kinesis_batch.changes.model import order
from tests.changes.support import BIG, Change, changes


@pytest.mark.parametrize(
    ("change", "table", "tombstone", "outcome"),
    [
        (("a", "upsert", [5], 0, "1"), None, None, "inserted"),
        (("a", "upsert", [5], 0, "1"), ("a", "upsert", [4], 0, "9"), None, "updated"),
        (("a", "upsert", [3], 0, "1"), ("a", "upsert", [4], 0, "9"), None, "ignored"),
        (("a", "upsert", [4], 0, "9"), ("a", "upsert", [4], 0, "9"), None, "duplicates"),
        (("a", "delete", [5], 0, "1"), ("a", "upsert", [4], 0, "9"), None, "deleted"),
        (("a", "expire", [5], 0, "1"), ("a", "upsert", [4], 0, "9"), None, "expired"),
        (("a", "upsert", [3], 0, "1"), None, ("a", "delete", [4], 0, "1"), "ignored"),  # older than a delete
        (("a", "upsert", [5], 0, "1"), None, ("a", "delete", [4], 0, "1"), "inserted"),  # newer than a delete
        (("a", "upsert", [5], 0, "1"), ("a", "upsert", [3], 0, "1"), ("a", "delete", [4], 0, "1"), "inserted"),
        # Its own tombstone, written by an attempt whose merge did not land: the row still goes.
        (("a", "delete", [4], 0, "1"), ("a", "upsert", [3], 0, "1"), ("a", "delete", [4], 0, "1"), "deleted"),
        (("a", "delete", [4], 0, "1"), None, ("a", "delete", [4], 0, "1"), "duplicates"),  # and it went
        (("a", "upsert", [3], 0, "1"), ("a", "upsert", [3], 0, "1"), ("a", "delete", [4], 0, "1"), "ignored"),
    ],
)
def test_only_changes_newer_than_the_table_and_its_tombstones_apply(
    change: Change, table: Change | None, tombstone: Change | None, outcome: str
) -> None:
    empty = changes().slice(0, 0)
    batch = changes(change)
    holding = held(changes(table) if table else empty, changes(tombstone) if tombstone else empty, batch.select(["k"]))
    decision = decide(batch, ["k"], holding)
    assert dict(decision.counts["s-0"]) == {outcome: 1}
    applied = decision.upserts.num_rows + decision.deletes.num_rows
    assert applied == (0 if outcome in ("ignored", "duplicates") else 1)
    assert decision.deletes.num_rows == (1 if outcome in ("deleted", "expired") else 0)


Row = tuple[int, str, list[int] | None, int, str]  # key, op, position, depth, sequence number


def reference(batch: list[Row], rows: list[Row], tombstones: list[Row]) -> dict[int, str]:
    """The contract, one key at a time: each batch change's outcome."""
    outcomes = {}
    for key, op, position, depth, sequence in batch:
        mine = order(position, depth, sequence, 0)
        live = [order(r[2], r[3], r[4], 0) for r in rows if r[0] == key]
        dead = [order(r[2], r[3], r[4], 0) for r in tombstones if r[0] == key]
        newest = max([*live, *dead], default=None)
        deleting = op in ("delete", "expire")
        if newest is None or mine > newest:
            outcome = ("expired" if op == "expire" else "deleted") if deleting else None
        elif mine < newest:
            outcome = "ignored"
        else:  # the same order: the same change, unless a delete whose merge did not land
            unfinished = deleting and newest not in live and bool(live)
            outcome = ("expired" if op == "expire" else "deleted") if unfinished else "duplicates"
        if outcome is None:
            outcome = "updated" if newest in live else "inserted"
        outcomes[key] = outcome
    return outcomes


def random_rows(rng: random.Random, keys: list[int], ops: list[str]) -> list[Row]:
    def any_order() -> tuple[list[int] | None, int, str]:
        return rng.choice([None, [1], [2], [2, 0]]), rng.randrange(2), rng.choice(["5", "40", BIG])

    return [(key, rng.choice(ops), *any_order()) for key in keys]


@pytest.mark.parametrize("seed", range(15))
def test_random_batches_decide_as_the_contract_says(seed: int) -> None:
    rng = random.Random(seed)
    batch = random_rows(rng, list(range(40)), ["upsert", "delete", "expire"])
    rows = random_rows(rng, rng.sample(range(60), 25), ["upsert"])  # a table has one row per key
    tombstones = random_rows(rng, [rng.randrange(60) for _ in range(30)], ["delete"])
    rows += [r for r in batch if rng.random() < 0.15 and r[0] not in {t[0] for t in rows}]  # the same change
    as_table = {name: _table(found) for name, found in (("batch", batch), ("rows", rows), ("tombstones", tombstones))}
    holding = held(as_table["rows"], as_table["tombstones"], as_table["batch"].select(["k"]))
    decision = decide(as_table["batch"], ["k"], holding)
    wanted = reference(batch, rows, tombstones)
    assert sorted(decision.upserts.column("k").to_pylist()) == sorted(
        k for k, o in wanted.items() if o in ("inserted", "updated")
    )
    assert sorted(decision.deletes.column("k").to_pylist()) == sorted(
        k for k, o in wanted.items() if o in ("deleted", "expired")
    )
    assert dict(decision.counts["s-0"]) == dict(Counter(wanted.values()))


def _table(rows: list[Row]) -> pa.Table:
    built: Any = changes(*[(str(r[0]), r[1], r[2], r[3], r[4]) for r in rows])
    return built.set_column(0, "k", pa.array([r[0] for r in rows], pa.int64()))
