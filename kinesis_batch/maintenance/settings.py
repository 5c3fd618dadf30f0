"""What a maintenance run is asked to do: the target file size, the retention and (tables of
current state) how long deletes' tombstones are kept, checked when made (one line naming the flag)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any

from kinesis_batch import defaults
from kinesis_batch.bounds import POSITIVE, RETAIN_HOURS, TARGET_FILE_MB
from kinesis_batch.changes.settings import TOMBSTONE_HOURS
from kinesis_batch.options import coerce, option


@dataclass(frozen=True)
class MaintainSettings:
    """Each field an option (kinesis_batch.options), as the stream settings are: the command
    line's flags and the forms are drawn from them, and their checks are the same."""

    target_file_mb: int = option(
        defaults.TARGET_FILE_MB,
        f"compaction writes files of this size, as the runs' (default {defaults.TARGET_FILE_MB})",
        bound=TARGET_FILE_MB,
    )
    retain_hours: int = option(
        defaults.RETAIN_HOURS,
        f"keep versions and snapshots this long; remove unreferenced files once this old (default "
        f"{defaults.RETAIN_HOURS}: a week)",
        bound=RETAIN_HOURS,
    )
    tombstone_hours: float = option(
        TOMBSTONE_HOURS,
        f"a table of current state: expire the tombstones of deletes older than this, as the runs' "
        f"--tombstone-hours (default {TOMBSTONE_HOURS:g})",
        bound=POSITIVE,
    )

    def __post_init__(self) -> None:
        for each in fields(self):
            coerce(self, each)  # its type and bounds

    @property
    def target_bytes(self) -> int:
        return self.target_file_mb * 1024 * 1024

    @property
    def retain(self) -> timedelta:
        return timedelta(hours=self.retain_hours)


#: The maintenance settings as adapters offer them.
MAINTAIN_OPTIONS = tuple(fields(MaintainSettings))


def maintain_option(name: str) -> Any:
    return next(each for each in MAINTAIN_OPTIONS if each.name == name)


__all__ = ["MAINTAIN_OPTIONS", "MaintainSettings", "maintain_option"]
