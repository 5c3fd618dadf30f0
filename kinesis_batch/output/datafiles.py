"""The files a table is made of now, and what they say about it: how many, how big, and whether
its recent partitions are made of files too small to read fast. Pure: values in, values out.

Every format lists its current data files as :class:`DataFile` values
(:meth:`kinesis_batch.output.sink.Sink.data_files`); maintenance compacts from them, and the
status views and their checks judge them here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MIB = 1024 * 1024
#: The partitions a check calls recent: the newest this many, by partition value.
RECENT_PARTITIONS = 7


@dataclass(frozen=True)
class DataFile:
    """One data file of the table as it is now: its path (as the format names it), its size in
    bytes, its rows, and its partition value as text (None: unpartitioned, or the null
    partition). ``group``: what compaction may merge across, besides the partition (a parquet
    batch folder; "" for the table formats)."""

    path: str
    bytes: int
    rows: int
    partition: str | None = None
    group: str = ""


@dataclass(frozen=True)
class FileStats:
    """What a table's files add up to, all of them and those of its recent partitions."""

    files: int
    bytes: int
    partitions: int
    recent_partitions: int
    recent_files: int
    recent_bytes: int
    recent_groups: int = 0  # what compaction can merge among them: partitions (parquet: of one batch each)

    @property
    def mean_file_bytes(self) -> int:
        return self.bytes // self.files if self.files else 0

    @property
    def recent_mean_file_bytes(self) -> int:
        return self.recent_bytes // self.recent_files if self.recent_files else 0

    @classmethod
    def of(cls, files: Sequence[DataFile]) -> FileStats:
        by_partition: dict[str | None, list[DataFile]] = defaultdict(list)
        for file in files:
            by_partition[file.partition].append(file)
        # Partition values sort by time for day and hour; for identity the "newest" are simply
        # the last few, which is as good a sample as any.
        recent = sorted(by_partition, key=lambda value: "" if value is None else value)[-RECENT_PARTITIONS:]
        recent_files = [file for value in recent for file in by_partition[value]]
        return cls(
            files=len(files),
            bytes=sum(file.bytes for file in files),
            partitions=len(by_partition),
            recent_partitions=len(recent),
            recent_files=len(recent_files),
            recent_bytes=sum(file.bytes for file in recent_files),
            recent_groups=len({(file.group, file.partition) for file in recent_files}),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "bytes": self.bytes,
            "partitions": self.partitions,
            "mean_file_bytes": self.mean_file_bytes,
            "recent_partitions": self.recent_partitions,
            "recent_files": self.recent_files,
            "recent_bytes": self.recent_bytes,
            "recent_groups": self.recent_groups,
            "recent_mean_file_bytes": self.recent_mean_file_bytes,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> FileStats:
        names = ("files", "bytes", "partitions", "recent_partitions", "recent_files", "recent_bytes", "recent_groups")
        return cls(**{name: int(body.get(name, 0)) for name in names})


def small_files(stats: FileStats, threshold_bytes: int) -> str | None:
    """One line when the recent partitions' files are small on average (below
    ``threshold_bytes``) and more than one in what compaction can merge (a partition; of a
    parquet folder, a partition of one batch), so that maintenance would fix it; None
    otherwise. One small file is as compact as it gets: a warning that cannot clear is noise."""
    if not stats.recent_files or stats.recent_mean_file_bytes >= threshold_bytes:
        return None
    if stats.recent_files <= stats.recent_groups:
        return None
    return (
        f"small files: the {stats.recent_partitions} newest partitions hold {stats.recent_files} files of "
        f"{_mib(stats.recent_mean_file_bytes)} on average (below {_mib(threshold_bytes)}); "
        "run kinesis-batch maintain on the output"
    )


def grouped(files: Iterable[DataFile]) -> dict[tuple[str, str | None], list[DataFile]]:
    """``files`` by what compaction may merge: (group, partition), each in path order."""
    groups: dict[tuple[str, str | None], list[DataFile]] = defaultdict(list)
    for file in sorted(files, key=lambda file: file.path):
        groups[(file.group, file.partition)].append(file)
    return dict(groups)


def _mib(size: int) -> str:
    return f"{size / MIB:.1f} MiB" if size >= MIB / 10 else f"{size / 1024:.1f} KiB"


__all__ = ["MIB", "RECENT_PARTITIONS", "DataFile", "FileStats", "grouped", "small_files"]
