"""Runs over a stream's checkpoint history: what each run committed, how far behind it began,
and the job runs it was billed for.

Pure: history entries and bills in, one summary per run out. A run is its run id; a commit made
outside a run (``update_checkpoint``) counts as a run of its own batch. A run that was billed
for a job run but committed nothing (cancelled, failed, read nothing new) is a run too: its
records are 0, its time the bill's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from kinesis_batch.checkpoints.bills import Bill
from kinesis_batch.checkpoints.history import HistoryEntry
from kinesis_batch.control.waiting import Waited
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
    cost: ReadCost | None = None  # the committed read's bill, when a service billed it
    billed: tuple[Bill, ...] = ()  # every job run billed to the run, whatever its outcome
    control_plane: Waited | None = None  # what its control-plane calls met, when anything

    @property
    def committed(self) -> bool:
        """Whether the run moved a checkpoint (else only its bills are known)."""
        return self.shards > 0


def summarize_runs(
    entries: Iterable[HistoryEntry], *, bills: Sequence[Bill] = (), last: int | None = None
) -> list[RunSummary]:
    """One summary per run, oldest first (by each run's last commit, or its last bill when it
    committed nothing); ``last``: only the newest so many."""
    by_run: dict[str, list[HistoryEntry]] = {}
    for entry in entries:
        by_run.setdefault(entry.run_id or entry.batch_id, []).append(entry)
    billed: dict[str, list[Bill]] = {}
    for bill in bills:
        billed.setdefault(bill.run_id, []).append(bill)
    summaries = [_summary(run, by_run.get(run, []), billed.get(run, [])) for run in by_run.keys() | billed.keys()]
    summaries.sort(key=lambda summary: (summary.committed_at, summary.run))
    return summaries[-last:] if last else summaries


def _summary(run: str, entries: list[HistoryEntry], bills: list[Bill]) -> RunSummary:
    lags = [entry.lag_at_start_ms for entry in entries if entry.lag_at_start_ms is not None]
    return RunSummary(
        run=run,
        committed_at=max(entry.committed_at for entry in entries) if entries else max(b.ended_at for b in bills),
        records=sum(entry.records for entry in entries),
        shards=len({entry.lease_key for entry in entries}),
        lag_at_start_ms=max(lags) if lags else None,
        landing=total([entry.landing for entry in entries]),
        cost=next((entry.cost for entry in entries if entry.cost is not None), None),  # one bill a run
        billed=tuple(bills),
        control_plane=next((e.control_plane for e in entries if e.control_plane is not None), None),  # the run's
    )


__all__ = ["RunSummary", "summarize_runs"]
