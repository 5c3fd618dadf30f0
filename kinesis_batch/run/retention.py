"""The retention policy of a read: records lost to retention fail the run unless the user opted
in (promise 5, no silent data loss), and a backlog close to the retention period is warned of."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kinesis_batch.errors import NOTHING_PUBLISHED, TrimmedDataError
from kinesis_batch.shards.lag import RetentionRisk


def check_gaps(trimmed: Mapping[str, str | None], *, allow_gaps: bool, progress: Callable[[str], None]) -> None:
    """``trimmed``: shard -> the checkpoint retention trimmed past (None: nothing lost). Raises
    TrimmedDataError, or with ``allow_gaps`` says so: the gap is in the batch's commit record."""
    gaps = {shard: after for shard, after in sorted(trimmed.items()) if after}
    if not gaps:
        return
    where = ", ".join(f"{shard} after {after}" for shard, after in gaps.items())
    if not allow_gaps:
        raise TrimmedDataError(
            f"retention trimmed records the checkpoints point at ({where}); {NOTHING_PUBLISHED}. "
            "Rerun with --allow-gaps to record the gap and go on"
        )
    progress(f"WARNING: records lost to retention ({where}); recorded in the batch's commit record")


def warn_if_at_risk(
    shard_id: str, backlog_millis: int | None, retention_hours: float, progress: Callable[[str], None]
) -> None:
    """Warn when a backlog's age comes close to the retention period (it will be trimmed)."""
    if backlog_millis and RetentionRisk.judge(backlog_millis / 1000, retention_hours) is not RetentionRisk.OK:
        progress(
            f"WARNING: {shard_id}'s backlog was {backlog_millis / 3_600_000:.1f} h old when read, "
            f"retention is {retention_hours:g} h: run more often or raise the retention"
        )


__all__ = ["check_gaps", "warn_if_at_risk"]
