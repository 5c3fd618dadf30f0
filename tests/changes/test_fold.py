"""Collapsing a key's changes to its newest, and choosing the changes newer than the table:
tables of cases."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch.changes.apply import decide, held
from kinesis_batch.changes.fold import newest
from kinesis_batch.changes.model import order

# (key, op, position, depth, sequence number)
Change = tuple[str, str, list[int] | None, int, str]


def changes(*rows: Change, shard: str = "s-0") -> pa.Table:
    return pa.table(
        {
            "k": [r[0] for r in rows],
            "change_op": [r[1] for r in rows],
            "change_position": pa.array([r[2] for r in rows], pa.list_(pa.int64())),
            "lineage_depth": pa.array([r[3] for r in rows], pa.int32()),
            "sequence_number": [r[4] for r in rows],
            "sub_sequence_number": pa.array([0] * len(rows), pa.int64()),
            "shard_id": [shard] * len(rows),
        }
    )


BIG = "49" + "9" * 54  # a 56-digit sequence number: only integers order it


@pytest.mark.parametrize(
    ("rows", "kept", "dropped"),
    [
        ([("a", "upsert", [1], 0, "1"), ("a", "upsert", [2], 0, "2")], [[2]], {"superseded": 1}),
        ([("a", "upsert", [2], 0, "1"), ("a", "upsert", [1], 0, "2")], [[2]], {"superseded": 1}),  # position first
        ([("a", "upsert", [2], 0, "1"), ("a", "upsert", [2], 0, "5")], [[2]], {"duplicates": 1}),
        ([("a", "upsert", None, 0, BIG), ("a", "delete", None, 0, "9" * 10)], [None], {"superseded": 1}),
        ([("a", "upsert", None, 0, "900"), ("a", "upsert", None, 1, "100")], [None], {"superseded": 1}),  # child last
        ([("a", "upsert", [1], 0, "1"), ("b", "upsert", [1], 0, "2")], [[1], [1]], {}),
    ],
    ids=["newer-later", "position-beats-kinesis", "duplicate", "integer-sequence", "child-shard-wins", "two-keys"],
)
def test_a_keys_changes_collapse_to_the_newest(rows: list[Change], kept: list[Any], dropped: dict[str, int]) -> None:
    folded = newest(changes(*rows), ["k"])
    assert folded.rows.column("change_position").to_pylist() == kept
    assert dict(folded.dropped.get("s-0", {})) == dropped
    if len(rows) == 2 and rows[0][0] == rows[1][0]:
        winner = max(rows, key=lambda r: order(r[2], r[3], r[4], 0))
        assert folded.rows.column("sequence_number").to_pylist() == [winner[4]]


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
    holding = held(changes(table) if table else empty, changes(tombstone) if tombstone else empty, ["k"])
    decision = decide(changes(change), ["k"], holding)
    assert dict(decision.counts["s-0"]) == {outcome: 1}
    applied = decision.upserts.num_rows + decision.deletes.num_rows
    assert applied == (0 if outcome in ("ignored", "duplicates") else 1)
    assert decision.deletes.num_rows == (1 if outcome in ("deleted", "expired") else 0)
