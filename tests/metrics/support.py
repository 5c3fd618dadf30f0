"""A run's shard commits as a metrics test needs them (test helper)."""

from __future__ import annotations

from kinesis_batch.landing import Landing
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.storage.records import ShardCommit

TIMINGS = {"start": 0.2, "read": 3.5, "publish": 0.4, "commit": 0.1}


def shard(
    shard_id: str, records: int, *, rows: int | None = None, dead: int = 0, lag_ms: int | None = 90_000
) -> ShardCommit:
    """A shard's commit: ``records`` read (1 KiB each), ``rows``/``dead`` when decoded."""
    landing = Landing(rows=rows, dead_letters=dead) if rows is not None else None
    return ShardCommit(
        shard_id,
        Checkpoint.at("100"),
        Checkpoint.at("200"),
        records,
        False,
        lag_at_start_ms=lag_ms,
        landing=landing,
        bytes=records * 1024,
        millis_behind_latest=2_000 if lag_ms else None,
    )
