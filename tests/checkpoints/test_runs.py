"""summarize_runs: one summary per run over the checkpoint history (pure; a table of cases)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from kinesis_batch.checkpoints.bills import Bill
from kinesis_batch.checkpoints.history import HistoryEntry
from kinesis_batch.checkpoints.runs import RunSummary, summarize_runs
from kinesis_batch.control.waiting import Waited
from kinesis_batch.cost import ReadCost
from kinesis_batch.shards.checkpoint import Checkpoint

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def entry(shard: str, run: str | None, minute: int, records: int, lag_ms: int | None, batch: str = "") -> HistoryEntry:
    return HistoryEntry(
        lease_key=shard,
        batch_id=batch or f"batch-{run}",
        run_id=run,
        owner="worker",
        committed_at=T0 + timedelta(minutes=minute),
        from_checkpoint=Checkpoint.trim_horizon(),
        to_checkpoint=Checkpoint.at("1"),
        records=records,
        lag_at_start_ms=lag_ms,
    )


def summary(run: str, minute: int, records: int, shards: int, lag_ms: int | None) -> RunSummary:
    return RunSummary(run, T0 + timedelta(minutes=minute), records, shards, lag_ms)


@pytest.mark.parametrize(
    ("entries", "last", "expected"),
    [
        pytest.param([], None, [], id="no history"),
        pytest.param(
            [entry("s0", "r1", 0, 5, 1000), entry("s1", "r1", 1, 7, 4000)],
            None,
            [summary("r1", 1, 12, 2, 4000)],
            id="a run's records add up, its lag is its worst shard's, its time its last commit",
        ),
        pytest.param(
            [entry("s0", "r2", 60, 3, 10), entry("s0", "r1", 0, 5, 20)],
            None,
            [summary("r1", 0, 5, 1, 20), summary("r2", 60, 3, 1, 10)],
            id="oldest first, whatever order the entries come in",
        ),
        pytest.param(
            [entry("s0", "r1", 0, 5, None), entry("s1", "r1", 0, 5, 300)],
            None,
            [summary("r1", 0, 10, 2, 300)],
            id="entries without a lag do not hide the known ones",
        ),
        pytest.param(
            [entry("s0", "r1", 0, 5, None)],
            None,
            [summary("r1", 0, 5, 1, None)],
            id="no lag known at all: None, not zero",
        ),
        pytest.param(
            [entry("s0", None, 5, 0, None, batch="manual-1"), entry("s0", "r1", 0, 5, 0)],
            None,
            [summary("r1", 0, 5, 1, 0), summary("manual-1", 5, 0, 1, None)],
            id="a commit outside a run counts as its batch",
        ),
        pytest.param(
            [entry("s0", "r1", 0, 1, 0), entry("s0", "r2", 1, 2, 0), entry("s0", "r3", 2, 3, 0)],
            2,
            [summary("r2", 1, 2, 1, 0), summary("r3", 2, 3, 1, 0)],
            id="last keeps the newest runs",
        ),
        pytest.param(
            [entry("s0", "r1", 0, 1, 0), entry("s0", "r1", 3, 2, 0)],
            None,
            [summary("r1", 3, 3, 1, 0)],
            id="a shard committed twice by one run counts once among its shards",
        ),
        pytest.param(
            [entry("s0", "r1", 0, 1, 0), replace(entry("s1", "r1", 0, 1, 0), control_plane=Waited(14, 2, 9.0))],
            None,
            [replace(summary("r1", 0, 2, 2, 0), control_plane=Waited(14, 2, 9.0))],
            id="what the run's control-plane calls met is the run's, on whichever entry has it",
        ),
    ],
)
def test_summarize_runs(entries: list[HistoryEntry], last: int | None, expected: list[RunSummary]) -> None:
    assert summarize_runs(entries, last=last) == expected


def bill(run: str, job: str, minute: int, state: str, vcpu_hours: float) -> Bill:
    return Bill(run, state, T0 + timedelta(minutes=minute), ReadCost(job, "app", vcpu_hours, 4 * vcpu_hours, 0.0))


@pytest.mark.parametrize(
    ("entries", "bills", "expected"),
    [
        pytest.param(
            [], [bill("r1", "j1", 3, "CANCELLED", 0.1)],
            [RunSummary("r1", T0 + timedelta(minutes=3), 0, 0, None, billed=(bill("r1", "j1", 3, "CANCELLED", 0.1),))],
            id="a run that committed nothing is a run of its bills: records 0, its time the last bill's",
        ),
        pytest.param(
            [entry("s0", "r1", 5, 4, 0)], [bill("r1", "j1", 1, "CANCELLED", 0.1), bill("r1", "j2", 4, "SUCCESS", 0.2)],
            [replace(summary("r1", 5, 4, 1, 0), billed=(bill("r1", "j1", 1, "CANCELLED", 0.1),
                                                       bill("r1", "j2", 4, "SUCCESS", 0.2)))],
            id="a committed run keeps its commits' time and every job run billed to it",
        ),
        pytest.param(
            [entry("s0", "r2", 9, 1, 0)], [bill("r1", "j1", 1, "FAILED", 0.1)],
            [RunSummary("r1", T0 + timedelta(minutes=1), 0, 0, None, billed=(bill("r1", "j1", 1, "FAILED", 0.1),)),
             summary("r2", 9, 1, 1, 0)],
            id="runs with and without commits in one order, by time",
        ),
    ],
)  # fmt: skip
def test_summarize_runs_with_bills(entries: list[HistoryEntry], bills: list[Bill], expected: list[RunSummary]) -> None:
    summaries = summarize_runs(entries, bills=bills)
    assert summaries == expected
    assert [s.committed for s in summaries] == [bool(s.shards) for s in expected]
