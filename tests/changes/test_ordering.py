"""The order rule as Arrow columns agrees with kinesis_batch.changes.model.order, the rule as
Python values: random orders (positions of every length, none, 129-digit sequence numbers),
sorted and compared both ways."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kinesis_batch.changes.model import Order, order
from kinesis_batch.changes.ordering import compare, newest_first, order_columns, position_width, same_position

SEQUENCES = ["0", "1", "9", "10", "99", str(2**128 - 1), str(2**128), "49" + "9" * 54, "9" * 129]


def random_orders(rng: random.Random, count: int) -> list[tuple[list[int] | None, int, str, int]]:
    made = []
    for _ in range(count):
        length = rng.choice([None, 0, 1, 1, 2, 3])
        position = None if length is None else [rng.choice([-(2**63), -1, 0, 1, 2, 2**63 - 1]) for _ in range(length)]
        made.append((position, rng.randrange(3), rng.choice(SEQUENCES), rng.randrange(3)))
    return made


def as_table(rows: list[tuple[list[int] | None, int, str, int]]) -> pa.Table:
    return pa.table(
        {
            "change_position": pa.array([r[0] for r in rows], pa.list_(pa.int64())),
            "lineage_depth": pa.array([r[1] for r in rows], pa.int32()),
            "sequence_number": [r[2] for r in rows],
            "sub_sequence_number": pa.array([r[3] for r in rows], pa.int64()),
        }
    )


def python_orders(rows: list[tuple[list[int] | None, int, str, int]]) -> list[Order]:
    return [order(*row) for row in rows]


@pytest.mark.parametrize("seed", range(20))
def test_arrow_sorts_changes_as_the_python_rule_orders_them(seed: int) -> None:
    rows = random_orders(random.Random(seed), 60)
    columns = order_columns(as_table(rows), position_width(as_table(rows)))
    ranked = pc.sort_indices(columns, sort_keys=newest_first(columns.schema.names))
    expected = sorted(python_orders(rows), reverse=True)
    assert [python_orders(rows)[i] for i in ranked.to_pylist()] == expected


@pytest.mark.parametrize("seed", range(20))
def test_compare_says_what_python_says_of_each_pair(seed: int) -> None:
    rng = random.Random(seed)
    left, right = random_orders(rng, 80), random_orders(rng, 80)
    right[:10] = left[:10]  # some equal pairs
    width = position_width(as_table(left), as_table(right))
    got = compare(order_columns(as_table(left), width), order_columns(as_table(right), width)).to_pylist()
    wanted = [(a > b) - (a < b) for a, b in zip(python_orders(left), python_orders(right), strict=True)]
    assert got == wanted


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [([1, 2], [1, 2], True), ([1], [1, 0], False), (None, None, False), ([], [], False), ([3], [4], False)],
    ids=["equal", "prefix", "no-position", "empty", "differ"],
)
def test_only_an_equal_source_position_is_the_same_change(
    left: list[int] | None, right: list[int] | None, same: bool
) -> None:
    width = position_width(as_table([(left, 0, "1", 0)]), as_table([(right, 0, "2", 0)]))
    a = order_columns(as_table([(left, 0, "1", 0)]), width)
    b = order_columns(as_table([(right, 0, "2", 0)]), width)
    assert same_position(a, b).to_pylist() == [same]


def test_a_sliced_table_reads_its_own_positions() -> None:
    rows = [([1], 0, "1", 0), ([2, 3], 0, "2", 0), (None, 0, "3", 0), ([4], 0, "4", 0)]
    sliced = pa.Table.from_batches(as_table(rows).to_batches()).slice(1, 3)
    columns = order_columns(sliced, 2)
    assert columns.column(0).to_pylist() == [2, None, 4]
    assert columns.column(1).to_pylist() == [3, None, None]
