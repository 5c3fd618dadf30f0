"""Collapsing a key's changes to its newest: tables of cases, and random batches against a fold
written in plain Python."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch.changes import fold
from kinesis_batch.changes.fold import kept_among, newest
from kinesis_batch.changes.model import order
from tests.changes.support import BIG, Change, changes


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


def random_changes(
    rng: random.Random, count: int, keys: int
) -> list[tuple[str, int, str, str, list[int] | None, int, str]]:
    """(key part 1, key part 2, shard, op, position, depth, sequence number): few keys, so that
    many changes share one; positions repeat, so that some are the same change again."""
    made = []
    for _ in range(count):
        position = rng.choice([None, [rng.randrange(4)], [rng.randrange(2), rng.randrange(2)]])
        sequence = rng.choice(["7", "10", BIG, str(2**128)])
        key = rng.randrange(keys)
        made.append(
            (
                f"k{key % 3}",
                key,
                f"s-{rng.randrange(2)}",
                rng.choice(["upsert", "delete"]),
                position,
                rng.randrange(2),
                sequence,
            )
        )
    return made


def reference_fold(rows: list[Any]) -> tuple[list[int], dict[str, Counter[str]]]:
    """The contract, one row at a time: the first of the greatest order wins each key."""
    best: dict[tuple[str, int], int] = {}
    for index, row in enumerate(rows):
        held = best.get((row[0], row[1]))
        if held is None or order(row[4], row[5], row[6], 0) > order(*_order_of(rows[held])):
            best[(row[0], row[1])] = index
    dropped: dict[str, Counter[str]] = {}
    for index, row in enumerate(rows):
        winner = rows[best[(row[0], row[1])]]
        if index not in best.values():
            same = bool(row[4]) and row[4] == winner[4]
            dropped.setdefault(row[2], Counter())["duplicates" if same else "superseded"] += 1
    return sorted(best.values()), dropped


def _order_of(row: Any) -> tuple[Any, ...]:
    return (row[4], row[5], row[6], 0)


@pytest.mark.parametrize("seed", range(15))
def test_random_batches_fold_as_the_contract_says(seed: int) -> None:
    rows = random_changes(random.Random(seed), 120, keys=25)
    table = pa.table(
        {
            "part": [r[0] for r in rows],
            "k": [r[1] for r in rows],
            "shard_id": [r[2] for r in rows],
            "change_op": [r[3] for r in rows],
            "change_position": pa.array([r[4] for r in rows], pa.list_(pa.int64())),
            "lineage_depth": pa.array([r[5] for r in rows], pa.int32()),
            "sequence_number": [r[6] for r in rows],
            "sub_sequence_number": pa.array([0] * len(rows), pa.int64()),
            "row": list(range(len(rows))),
        }
    )
    folded = newest(table, ["part", "k"])
    kept, dropped = reference_fold(rows)
    assert folded.rows.column("row").to_pylist() == kept
    assert {shard: dict(counts) for shard, counts in folded.dropped.items()} == {
        shard: dict(counts) for shard, counts in dropped.items()
    }


SCANNED = pa.schema([("id", pa.int64()), ("sequence_number", pa.string()), ("change_position", pa.list_(pa.int64()))])


def scanned(ids: list[int], page: int) -> list[pa.RecordBatch]:
    rows = pa.table(
        {"id": ids, "sequence_number": [str(10**55 + i) for i in ids], "change_position": [[i] for i in ids]},
        schema=SCANNED,
    )
    return rows.to_batches(max_chunksize=page)


@pytest.mark.parametrize(
    ("ids", "page", "held", "wanted"),
    [
        ([], 4, 8, [1]),  # nothing scanned: an empty table of the scan's columns
        ([5, 1, 9, 3, 7], 2, 8, []),  # nothing wanted
        ([5, 1, 9, 3, 7], 2, 8, [9, 5, 42]),  # in the scan's order; 42 not there
        ([5, 1, 9, 3, 7], 2, 3, [7, 5, 1, 3]),  # filtered in chunks of 2 pages, then the rest
        ([5, 1, 9, 3, 7], 1, 1, [3, 1]),  # a chunk a page
        (list(range(100)), 7, 20, list(range(0, 100, 3))),
    ],
)
def test_the_scans_rows_of_the_wanted_keys_are_kept_in_order_whatever_the_chunk(
    ids: list[int], page: int, held: int, wanted: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fold, "FILTERED_ROWS", held)
    got = kept_among(scanned(ids, page), SCANNED, "id", pa.array(wanted, pa.int64()))
    assert got.schema == SCANNED
    expected = [i for i in ids if i in wanted]
    assert got.column("id").to_pylist() == expected
    assert got.column("change_position").to_pylist() == [[i] for i in expected]
