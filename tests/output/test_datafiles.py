"""A table's files: their figures, and when the small-files warning speaks (pure: tables of cases)."""

from __future__ import annotations

import pytest

from kinesis_batch.output.datafiles import MIB, RECENT_PARTITIONS, DataFile, FileStats, small_files


def files(*specs: tuple[str | None, float, str]) -> list[DataFile]:
    """(partition, MiB, group) each: a data file."""
    return [DataFile(f"f{n}", int(mib * MIB), 10, partition, group) for n, (partition, mib, group) in enumerate(specs)]


@pytest.mark.parametrize(
    ("case", "table", "warns"),
    [
        ("several small files in a partition", files(("d1", 1, ""), ("d1", 1, ""), ("d1", 2, "")), True),
        ("one small file a partition: as compact as it gets", files(("d1", 1, ""), ("d2", 1, "")), False),
        ("large files", files(("d1", 20, ""), ("d1", 30, "")), False),
        ("parquet: one file a batch and partition cannot merge", files(("d1", 1, "b1"), ("d1", 1, "b2")), False),
        ("parquet: two files of one batch can", files(("d1", 1, "b1"), ("d1", 1, "b1")), True),
        ("unpartitioned, small", files((None, 1, ""), (None, 1, "")), True),
        ("an empty table", [], False),
    ],
)
def test_the_warning_speaks_only_when_maintenance_would_merge_small_files(
    case: str, table: list[DataFile], warns: bool
) -> None:
    said = small_files(FileStats.of(table), 16 * MIB)
    assert (said is not None) == warns, case
    if said:
        assert said.startswith("small files: the ") and said.endswith("run kinesis-batch maintain on the output")


def test_only_the_newest_partitions_count_as_recent() -> None:
    old = [(f"2026-10-{day:02d}", 0.5, "") for day in range(1, 11) for _ in range(3)]  # many small, long ago
    new = [(f"2026-11-{day:02d}", 64.0, "") for day in range(1, RECENT_PARTITIONS + 1)]
    stats = FileStats.of(files(*old, *new))
    assert (stats.files, stats.partitions) == (37, 17)
    assert (stats.recent_partitions, stats.recent_files, stats.recent_mean_file_bytes) == (7, 7, 64 * MIB)
    assert small_files(stats, 16 * MIB) is None
    assert stats.mean_file_bytes < 16 * MIB  # the whole table's mean would have warned


def test_the_figures_round_trip_through_their_json() -> None:
    stats = FileStats.of(files(("d1", 1, "b1"), ("d1", 3, "b2"), ("d2", 2, "b2")))
    assert FileStats.from_json(stats.to_json()) == stats
    assert stats.to_json()["mean_file_bytes"] == 2 * MIB
