"""A run's metrics as data: named as the KCL names them, per stream, per shard at the detailed
level, lags from the slowest shard, rows from what the records became (table of cases)."""

from __future__ import annotations

import pytest

from kinesis_batch.control.waiting import Waited
from kinesis_batch.cost import ReadCost
from kinesis_batch.metrics.points import Point, points_of
from kinesis_batch.metrics.settings import DETAILED, SUMMARY
from kinesis_batch.storage.records import ShardCommit
from tests.metrics.support import TIMINGS, shard

STREAM = (("Stream", "clicks"),)


def by_name(points: list[Point], dimensions: tuple[tuple[str, str], ...] = STREAM) -> dict[str, float]:
    return {p.name: p.value for p in points if p.dimensions == dimensions}


@pytest.mark.parametrize(
    ("shards", "expected"),
    [
        (  # raw rows: a row per record, no dead letters; the lag of the slowest shard
            [shard("s-0", 10), shard("s-1", 5, lag_ms=300_000)],
            {"RecordsProcessed": 15, "BytesProcessed": 15_360, "RowsWritten": 15, "DeadLetters": 0,
             "MillisBehindLatest": 2_000, "LagSeconds": 300.0},
        ),
        (  # decoded: rows (a record may make several) and dead letters
            [shard("s-0", 10, rows=12, dead=1), shard("s-1", 4, rows=3, dead=1)],
            {"RecordsProcessed": 14, "BytesProcessed": 14_336, "RowsWritten": 15, "DeadLetters": 2,
             "MillisBehindLatest": 2_000, "LagSeconds": 90.0},
        ),
        (  # nothing read: zero records, no lag figures
            [],
            {"RecordsProcessed": 0, "BytesProcessed": 0, "RowsWritten": 0, "DeadLetters": 0},
        ),
        (  # a shard whose lag is unknown (a run before lags were kept) does not hide the others'
            [shard("s-0", 1, lag_ms=None), shard("s-1", 1, lag_ms=5_000)],
            {"RecordsProcessed": 2, "BytesProcessed": 2_048, "RowsWritten": 2, "DeadLetters": 0,
             "MillisBehindLatest": 2_000, "LagSeconds": 5.0},
        ),
    ],
)  # fmt: skip
def test_the_summary_is_per_stream_with_the_steps_seconds(
    shards: list[ShardCommit], expected: dict[str, float]
) -> None:
    points = points_of("clicks", shards, TIMINGS, SUMMARY)
    assert {p.dimensions for p in points} == {STREAM}
    assert by_name(points) == {**expected, "ReadSeconds": 3.5, "PublishSeconds": 0.4, "CommitSeconds": 0.1}
    assert {p.name: p.unit for p in points}["BytesProcessed"] == "Bytes"


def test_the_detailed_level_adds_each_shard_with_its_own_dimension() -> None:
    points = points_of("clicks", [shard("s-0", 10), shard("s-1", 5, lag_ms=300_000)], {}, DETAILED)
    assert by_name(points)["RecordsProcessed"] == 15
    one = by_name(points, (*STREAM, ("ShardId", "s-1")))
    assert one == {"RecordsProcessed": 5, "BytesProcessed": 5_120, "RowsWritten": 5, "DeadLetters": 0,
                   "MillisBehindLatest": 2_000, "LagSeconds": 300.0}  # fmt: skip
    assert "ReadSeconds" not in one  # the steps are the run's, not a shard's


def test_a_read_billed_by_emr_serverless_adds_its_bill_per_stream_only() -> None:
    cost = ReadCost("00job", "00app", 0.25, 1.0, 1.25)
    points = points_of("clicks", [shard("s-0", 10)], TIMINGS, DETAILED, cost)
    assert {k: v for k, v in by_name(points).items() if k.startswith("Billed")} == {
        "BilledVCPUHours": 0.25,
        "BilledMemoryGBHours": 1.0,
        "BilledStorageGBHours": 1.25,
    }
    assert not any(p.name.startswith("Billed") for p in points if p.dimensions != STREAM)
    assert not any(p.name.startswith("Billed") for p in points_of("clicks", [], TIMINGS, SUMMARY))


def test_what_the_control_plane_made_the_run_wait_is_two_figures_per_stream() -> None:
    points = points_of("clicks", [], {}, DETAILED, waited=Waited(throttles=14, failures=2, seconds=9.5))
    figures = by_name(points)
    assert (figures["ControlPlaneThrottles"], figures["ControlPlaneWaitSeconds"]) == (14, 9.5)
    assert {p.name: p.unit for p in points}["ControlPlaneWaitSeconds"] == "Seconds"
    assert "ControlPlaneThrottles" not in by_name(points_of("clicks", [], {}, SUMMARY))  # not told: not sent
