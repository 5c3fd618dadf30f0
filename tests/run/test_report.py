"""What a run did (kinesis_batch.run.report): its figures are its batch's commit record's, as
JSON and as the command line's one summary line; a run that published nothing says so."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from kinesis_batch.control.waiting import Waited
from kinesis_batch.landing import Landing
from kinesis_batch.run.report import RunReport
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.storage.records import CommitRecord, ShardCommit

AT = datetime(2026, 11, 29, tzinfo=UTC)


def report(record: CommitRecord | None) -> RunReport:
    return RunReport(
        run_id="r1",
        batch_id="r1",
        record=record,
        recovered={},
        leased_elsewhere={"shardId-9": "worker-b"},
        waiting={},
        seconds=2.5,
        output="s3://lake/app" if record else "",
    )


def shard(shard_id: str, records: int, landing: Landing | None) -> ShardCommit:
    return ShardCommit(shard_id, Checkpoint.trim_horizon(), Checkpoint.at("49", 0), records, False, landing=landing)


def test_a_published_runs_figures_are_its_commit_records() -> None:
    record = CommitRecord(
        "r1",
        "r1",
        "app",
        AT,
        (shard("shardId-0", 3, Landing(rows=2, dead_letters=1)), shard("shardId-1", 4, Landing(rows=4))),
    )
    done = report(record)
    assert done.published and done.shards == record.shards and done.records == 7 == record.records
    assert done.landing == record.landing == Landing(rows=6, dead_letters=1)
    body = done.to_json()
    assert (body["published"], body["records"], body["rows"], body["dead_letters"]) == (True, 7, 6, 1)
    assert [s["shard_id"] for s in body["shards"]] == ["shardId-0", "shardId-1"]
    assert done.lines() == [
        "skipped shardId-9: leased by worker-b",
        "run r1: 7 records (6 rows, 1 dead letters) from 2 shards in 2.5 s; s3://lake/app",
    ]


def test_a_run_that_published_nothing_has_no_figures_and_says_so() -> None:
    done = report(None)
    assert not done.published and done.shards == () and done.records == 0 and done.landing is None
    assert done.to_json()["records"] == 0 and "rows" not in done.to_json()
    assert done.lines("backfill")[-1] == "backfill r1: 0 records from 0 shards in 2.5 s; nothing new to publish"


def test_a_run_the_control_plane_made_wait_says_how_long_in_one_line_and_by_operation_in_its_json() -> None:
    met = {"DescribeStreamSummary": Waited(throttles=14, failures=1, seconds=9.25), "ListShards": Waited(1, 0, 0.5)}
    done = replace(report(None), control_plane=met)
    assert done.to_json()["control_plane"] == {
        "DescribeStreamSummary": {"throttles": 14, "failures": 1, "seconds": 9.25},
        "ListShards": {"throttles": 1, "failures": 0, "seconds": 0.5},
    }
    assert done.lines()[-2] == (
        "waited 9.8 s on the control plane (15 throttles, 1 dropped or failed calls: DescribeStreamSummary, ListShards)"
    )
    assert report(None).to_json()["control_plane"] == {} and len(report(None).lines()) == 2
