"""What maintenance does to a table, decided from listings: which small files are rewritten
together, and which files are orphans. Pure: values in, values out.

Compaction. In each partition (and, for parquet folders, each batch folder: ``DataFile.group``)
the files smaller than ``SMALL_SHARE`` of the target are rewritten together into files rolled at
the target size, when there are at least two of them: afterwards a partition holds its large
files and at most one file per target size of what were small ones. Large files are never
rewritten (no write amplification from one daily run to the next).

Orphans. A file under the table's data is an orphan when no commit the table keeps references
it, no staged batch is using it (a run between its read and its publish), and it is older than
the retention, and never younger than ``MIN_ORPHAN_AGE``: a writer that has not committed yet
(another maintenance's rewrite, deltalake's optimize) must keep its files whatever the
retention says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from kinesis_batch.output.datafiles import DataFile, grouped

#: A file below this share of the target size is small (Iceberg's rewrite uses the same ratio).
SMALL_SHARE = 0.75
#: No file younger than this is ever an orphan, whatever the retention.
MIN_ORPHAN_AGE = timedelta(hours=1)


@dataclass(frozen=True)
class Compaction:
    """The small files of one partition (of one group) to rewrite into files of the target size."""

    group: str
    partition: str | None
    inputs: tuple[DataFile, ...]

    @property
    def bytes(self) -> int:
        return sum(file.bytes for file in self.inputs)


def compactions(files: Iterable[DataFile], target_bytes: int) -> list[Compaction]:
    """The rewrites that leave at most one small-file's worth per target size in each partition."""
    small = [file for file in files if file.bytes < SMALL_SHARE * target_bytes]
    return [
        Compaction(group, partition, tuple(members))
        for (group, partition), members in sorted(grouped(small).items(), key=lambda item: _order(item[0]))
        if len(members) >= 2
    ]


def _order(key: tuple[str, str | None]) -> tuple[str, str]:
    group, partition = key
    return group, "" if partition is None else partition


@dataclass(frozen=True)
class Listed:
    """A file found under the table's location: its size and when it was last written."""

    bytes: int
    modified_ms: int


@dataclass(frozen=True)
class Survey:
    """What an orphan search found, by path under the table's root: the files there, those a
    commit the table keeps references, and the batches staged now (``data/<batch>/`` is theirs).
    A format lists in this order, so a batch staged after the listing cannot be missed."""

    listed: Mapping[str, Listed]
    referenced: set[str]
    staged: set[str]


def orphans(survey: Survey, *, now_ms: int, retain: timedelta) -> list[str]:
    """The paths of the survey that are orphans: not referenced, not in a staged batch's
    ``data/<batch>/`` folder, and older than ``retain`` (at least MIN_ORPHAN_AGE) at ``now_ms``."""
    cutoff = now_ms - int(max(retain, MIN_ORPHAN_AGE).total_seconds() * 1000)

    def staged(path: str) -> bool:
        parts = path.split("/", 2)
        return len(parts) == 3 and parts[0] == "data" and parts[1] in survey.staged

    return sorted(
        path
        for path, found in survey.listed.items()
        if path not in survey.referenced and found.modified_ms < cutoff and not staged(path)
    )


def expired(snapshots: Sequence[tuple[int, int]], current: int | None, *, now_ms: int, retain: timedelta) -> list[int]:
    """The ids of ``snapshots`` ((id, timestamp ms)) older than ``retain``, but ``current``."""
    cutoff = now_ms - int(retain.total_seconds() * 1000)
    return sorted(snapshot for snapshot, at in snapshots if at < cutoff and snapshot != current)


__all__ = ["MIN_ORPHAN_AGE", "SMALL_SHARE", "Compaction", "Listed", "Survey", "compactions", "expired", "orphans"]
