"""all_pairs against an oracle that enumerates every pair of the allowed product."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.matrices import ALL, Matrix
from tests.pairs import all_pairs, describe


def every_pair(dimensions: dict[str, list[Any]], allowed: set[tuple[Any, ...]]) -> set[tuple[int, Any, int, Any]]:
    """The oracle: every (dimension, value, dimension, value) some allowed row holds."""
    found = set()
    for row in allowed:
        for i, j in itertools.combinations(range(len(dimensions)), 2):
            found.add((i, row[i], j, row[j]))
    return found


@st.composite
def matrices(draw: st.DrawFn) -> tuple[dict[str, list[Any]], set[tuple[Any, ...]], list[tuple[Any, ...]]]:
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    dimensions = {f"d{i}": [f"v{i}.{k}" for k in range(size)] for i, size in enumerate(sizes)}
    product = list(itertools.product(*dimensions.values()))
    refused = draw(st.sets(st.sampled_from(product), max_size=len(product) // 2))
    allowed = set(product) - refused
    keep = draw(st.lists(st.sampled_from(sorted(allowed)), max_size=3)) if allowed else []
    return dimensions, allowed, keep


@settings(max_examples=100, deadline=None, derandomize=True)
@given(matrices())
def test_every_allowed_pair_is_in_a_row_and_every_drawn_row_is_allowed(
    matrix: tuple[dict[str, list[Any]], set[tuple[Any, ...]], list[tuple[Any, ...]]],
) -> None:
    dimensions, allowed, keep = matrix
    names = list(dimensions)
    rows = all_pairs(dimensions, keep=keep, allowed=lambda row: tuple(row[n] for n in names) in allowed)
    assert rows[: len(keep)] == keep
    assert all(row in allowed for row in rows[len(keep) :])
    covered = {(i, row[i], j, row[j]) for row in rows for i, j in itertools.combinations(range(len(names)), 2)}
    assert every_pair(dimensions, allowed) <= covered
    assert len(rows) <= len(keep) + len(allowed)
    assert rows == all_pairs(dimensions, keep=keep, allowed=lambda row: tuple(row[n] for n in names) in allowed)


@pytest.mark.parametrize(
    ("sizes", "at_most"),
    [
        ((5, 3, 2), 15),  # at least 5 x 3: the two largest
        ((5, 3, 2, 2), 16),  # a kill point x format x place x emulator matrix: 60 in the product
        ((2, 2, 2, 2, 2, 2), 8),
        ((3, 3, 3, 3), 12),  # 9 is the optimum; greedy gets within a few
    ],
)
def test_the_rows_are_far_fewer_than_the_product(sizes: tuple[int, ...], at_most: int) -> None:
    dimensions = {f"d{i}": list(range(size)) for i, size in enumerate(sizes)}
    assert len(all_pairs(dimensions)) <= at_most


def test_a_kept_row_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="has 1 values for 2 dimensions"):
        all_pairs({"a": [1], "b": [2]}, keep=[(1,)])


def test_describe_prints_the_rows_and_the_product() -> None:
    dimensions = {"step": ["read", "staged"], "format": ["delta", "iceberg"]}
    text = describe("crash", dimensions, all_pairs(dimensions))
    assert text.splitlines()[0] == "crash: 4 rows for every pair (the product: 4)"
    assert "  step | format" in text


def test_a_matrix_keeps_its_rows_first_and_groups_the_rest_by_its_leading_dimensions() -> None:
    matrix = Matrix(
        "crash",
        {"step": ("read", "staged", "published"), "format": ("parquet", "delta"), "where": ("local", "s3")},
        keep=(("published", "delta", "s3"),),
        allowed=lambda row: not (row["format"] == "parquet" and row["where"] == "s3"),
    )
    assert matrix.rows[0] == ("published", "delta", "s3")
    assert ("read", "parquet", "s3") not in matrix.rows
    groups = dict(matrix.by("format", "where"))
    assert set(groups) == {("parquet", "local"), ("delta", "local"), ("delta", "s3")}
    assert sorted(step for steps in groups.values() for step in steps) == sorted(row[0] for row in matrix.rows)
    with pytest.raises(ValueError, match="group by all but one"):
        matrix.by("format")


def test_the_suites_matrices_cover_every_step_of_each_format() -> None:
    for matrix in ALL:
        steps = set(matrix.dimensions["step"])
        for format in matrix.dimensions["format"]:
            assert {row[0] for row in matrix.rows if row[1] == format} == steps, (matrix.title, format)
