"""All-pairs: the fewest rows we can find that hold every pair of values of a test's dimensions.

A behaviour proven over several dimensions (kill point x format x place x emulator) mostly fails
through one value or the meeting of two; a product of every combination costs the product of
the sizes, pairs about the product of the two largest. ``all_pairs`` picks rows greedily, in a
fixed order (the same rows every run, so a test's ids are stable), starting from the rows a test
must keep (a combination known to behave differently), and leaves out the rows ``allowed`` refuses
(a pair no allowed row holds is not asked for).

``python -m tests.pairs`` prints every matrix of the suite that is drawn this way.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

Row = tuple[Any, ...]


def pairs_of(row: Row) -> set[tuple[int, Any, int, Any]]:
    """Every pair of (dimension, value) a row holds, the lower dimension first."""
    return {(i, row[i], j, row[j]) for i, j in itertools.combinations(range(len(row)), 2)}


def all_pairs(
    dimensions: Mapping[str, Sequence[Any]],
    *,
    keep: Iterable[Row] = (),
    allowed: Callable[[dict[str, Any]], bool] = lambda _: True,
) -> list[Row]:
    """Rows, one value of each dimension (in the mapping's order), such that every pair of values
    of two dimensions that some allowed row holds is in at least one row. ``keep``'s rows come
    first, as given."""
    names = list(dimensions)
    candidates = [row for row in itertools.product(*dimensions.values()) if allowed(dict(zip(names, row, strict=True)))]
    wanted: set[tuple[int, Any, int, Any]] = set().union(*(pairs_of(row) for row in candidates))
    rows: list[Row] = []
    for row in keep:
        row = tuple(row)
        if len(row) != len(names):
            raise ValueError(f"a kept row {row!r} has {len(row)} values for {len(names)} dimensions")
        rows.append(row)
        wanted -= pairs_of(row)
    held = [(row, pairs_of(row)) for row in candidates]
    while wanted:
        best, its = max(held, key=lambda row: len(row[1] & wanted))  # the first of the best: stable
        rows.append(best)
        wanted -= its
    return rows


def describe(title: str, dimensions: Mapping[str, Sequence[Any]], rows: Sequence[Row]) -> str:
    """A matrix as printed: its dimensions, its rows, and what the product would have been."""
    product = 1
    for values in dimensions.values():
        product *= len(values)
    lines = [f"{title}: {len(rows)} rows for every pair (the product: {product})", "  " + " | ".join(dimensions)]
    lines += ["  " + " | ".join(str(value) for value in row) for row in rows]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a printout
    from tests import matrices

    for matrix in matrices.ALL:
        print(describe(matrix.title, matrix.dimensions, matrix.rows), end="\n\n")
