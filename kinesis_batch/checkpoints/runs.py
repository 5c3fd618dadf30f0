"""Runs over a stream's checkpoint history: what each run committed, and how far behind it began.

Pure: history entries in, one summary per run out. A run is its run id; a commit made outside a
run (``update_checkpoint``) counts as a run of its own batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from kinesis_batch.checkpoints.history import HistoryEntry
from kinesis_batch.cost import ReadCost
from kinesis_batch.landing import Landing, total


@dataclass(frozen=True)
class RunSummary:
    run: str
    committed_at: datetime  # its last commit
    records: int
    shards: int  # the shards whose checkpoints it moved
    # The largest of its shards' lags when its read began; None when no entry knows it (a
    # commit written before the history kept lags, or one made outside a run).
    lag_at_start_ms: int | None
    landing: Landing | None = None  # decoded: rows, dead letters, filtered, reasons (all shards)
    cost: ReadCost | None = None  # the read's bill, when a service billed it


def summarize_runs(entries: Iterable[HistoryEntry], *, last: int | None = None) -> list[RunSummary]:
    """One summary per run, oldest first (by each run's last commit); ``last``: only the newest so many."""
    by_run: dict[str, list[HistoryEntry]] = {}
    for entry in entries:
        by_run.setdefault(entry.run_id or entry.batch_id, []).append(entry)
    summaries = [_summary(run, group) for run, group in by_run.items()]
    summaries.sort(key=lambda summary: (summary.committed_at, summary.run))
    return summaries[-last:] if last else summaries


def _summary(run: str, entries: list[HistoryEntry]) -> RunSummary:
    lags = [entry.lag_at_start_ms for entry in entries if entry.lag_at_start_ms is not None]
    return RunSummary(
        run=run,
        committed_at=max(entry.committed_at for entry in entries),
        records=sum(entry.records for entry in entries),
        shards=len({entry.lease_key for entry in entries}),
        lag_at_start_ms=max(lags) if lags else None,
        landing=total([entry.landing for entry in entries]),
        cost=next((entry.cost for entry in entries if entry.cost is not None), None),  # one bill a run
    )


__all__ = ["RunSummary", "summarize_runs"]
