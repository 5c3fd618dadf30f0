"""The suite's matrices drawn by all-pairs (tests.pairs), in one place: what each proves over which
dimensions, the rows kept because a combination behaves differently, and the rows drawn.
``python -m tests.pairs`` prints them all."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kinesis_batch.events import MAINTENANCE_STEPS
from tests.pairs import Row, all_pairs


@dataclass(frozen=True)
class Matrix:
    title: str
    dimensions: Mapping[str, Sequence[Any]]
    keep: tuple[Row, ...] = ()
    allowed: Callable[[dict[str, Any]], bool] = field(default=lambda _: True, compare=False)

    @property
    def rows(self) -> list[Row]:
        return all_pairs(self.dimensions, keep=self.keep, allowed=self.allowed)

    def by(self, *leading: str) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        """The rows grouped by the ``leading`` dimensions' values (a test each), each group with
        the values of the one dimension left (run side by side in that test), in row order."""
        names = list(self.dimensions)
        rest = [name for name in names if name not in leading]
        if len(rest) != 1:
            raise ValueError(f"{self.title}: group by all but one of {names}")
        groups: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
        for row in self.rows:
            values = dict(zip(names, row, strict=True))
            groups[tuple(values[name] for name in leading)].append(values[rest[0]])
        return [(key, tuple(values)) for key, values in groups.items()]


RUN_CRASH_STEPS = ("reading", "read", "staged", "published", "committed")


def parquet_is_local(row: dict[str, Any]) -> bool:
    """The tests' Parquet outputs are local folders (tests.output.support.output_args)."""
    return not (row["format"] == "parquet" and row["where"] == "s3")


#: A run killed -9 at a step, into a format, in a place (tests/scenarios/test_crash.py). Kept:
#: Iceberg on S3 at staged and at published, whose recoveries differ there (a discard, a roll
#: forward through the catalog's commit).
RUN_CRASH = Matrix(
    "kill -9 of a run: step x format x place",
    {"step": RUN_CRASH_STEPS, "format": ("parquet", "delta", "iceberg"), "where": ("local", "s3")},
    keep=(("staged", "iceberg", "s3"), ("published", "iceberg", "s3")),
    allowed=parquet_is_local,
)

#: Maintenance killed -9 at a step (tests/maintenance/test_crash.py). Kept: Delta on S3 once its
#: markers are archived and nothing expired yet, Iceberg on S3 with a rewrite's files written and
#: not committed: the leftovers that differ most there.
MAINTENANCE_CRASH = Matrix(
    "kill -9 of maintain: step x format x place",
    {"step": MAINTENANCE_STEPS, "format": ("parquet", "delta", "iceberg"), "where": ("local", "s3")},
    keep=(("archived", "delta", "s3"), ("compacting", "iceberg", "s3")),
    allowed=parquet_is_local,
)

ALL = (RUN_CRASH, MAINTENANCE_CRASH)
