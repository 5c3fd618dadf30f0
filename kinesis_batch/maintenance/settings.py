"""What a maintenance run is asked to do: the target file size, the retention and (tables of
current state) how long deletes' tombstones are kept, checked when made (one line naming the flag)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from kinesis_batch import defaults
from kinesis_batch.changes.settings import TOMBSTONE_HOURS, validate_tombstone_hours
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.parsers import validate_target_file_mb


@dataclass(frozen=True)
class MaintainSettings:
    """``target_file_mb``: compaction writes files of this size (``--target-file-mb``, as the
    runs); ``retain_hours``: snapshots and versions older than this are expired, and files no
    kept commit references are removed once this old (``--retain-hours``); ``tombstone_hours``:
    a table of current state's tombstones older than this are expired (``--tombstone-hours``, as
    the runs')."""

    target_file_mb: int = defaults.TARGET_FILE_MB
    retain_hours: int = defaults.RETAIN_HOURS
    tombstone_hours: float = TOMBSTONE_HOURS

    def __post_init__(self) -> None:
        validate_target_file_mb(self.target_file_mb)
        hours = self.retain_hours
        if isinstance(hours, bool) or not isinstance(hours, int) or not 0 <= hours <= 24 * 3650:
            raise IllegalArgumentError(f"--retain-hours must be a whole number of hours in 0..87600, not {hours!r}")
        validate_tombstone_hours(self.tombstone_hours)

    @property
    def target_bytes(self) -> int:
        return self.target_file_mb * 1024 * 1024

    @property
    def retain(self) -> timedelta:
        return timedelta(hours=self.retain_hours)


__all__ = ["MaintainSettings"]
