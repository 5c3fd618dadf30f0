"""Tables of current state under concurrency: two workers merging changes of different shards
into one table and a ``maintain`` of that table, all three let go at the same moment from right
before their commits, converge to the oracle's state (each format's optimistic concurrency makes
a merge that lost the race decide again on the reloaded table); then ``maintain`` compacts the
merged table's files and expires its old tombstones, and the state is still the oracle's."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.config import RunConfig
from kinesis_batch.events import observing
from kinesis_batch.maintenance import MaintainSettings, MaintenanceReport, maintain
from kinesis_batch.output.tombstones import Tombstones
from kinesis_batch.parsers import default_table
from kinesis_batch.run import CatchUpRun, RunReport
from tests.changes.support import oracle, put_changes, shuffled_history, table_state
from tests.maintenance.test_with_catch_up import BothAtTheirCommit
from tests.output.support import output_args, read_rows, run_config, sink_of
from tests.streams import StreamFactory

KINDS = [("delta", "s3"), ("iceberg", "local")]
WORKERS = ("one", "two")


def config(stream: str, output: tuple[str, ...], worker: str) -> RunConfig:
    return run_config(stream, output, worker, lease_seconds=300, read_limits="none", changes="dynamodb")


def catch_up(spark: Any, stream: str, output: tuple[str, ...], worker: str) -> RunReport:
    return CatchUpRun(
        config(stream, output, worker), kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark
    ).run()


def hold_one_shard_each(spark: Any, stream: str, output: tuple[str, ...]) -> None:
    """Give each worker one shard's lease, as a run of its own that died would leave it; left
    alone, the first run to start takes both and the other merges nothing."""
    for worker, shard_id in zip(WORKERS, ["shardId-000000000000", "shardId-000000000001"], strict=True):
        run = CatchUpRun(
            config(stream, output, worker), kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark
        )
        run.manager.ensure_leases(run.plan().new_leases)
        assert [lease.lease_key for lease in run.manager.take([shard_id]).acquired] == [shard_id]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_two_workers_merging_different_shards_beside_a_maintain_converge_and_maintain_keeps_the_state(
    format: str,
    where: str,
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = streams.create(shards=2)
    output = output_args(format, where, tmp_path, monkeypatch)
    sink = sink_of(output, app=default_table(name), stream=name)
    # A partition key per item: a merge then rewrites only its items' files, and leaves the
    # small files the maintenance compacts (Iceberg deletes by the key's first column).
    history = shuffled_history(30, 3, seed=11, sharing=1)
    third = len(history) // 3
    for part in (history[:third], history[third : 2 * third]):  # merged files for the maintenance to compact
        put_changes(kinesis, name, part)
        assert catch_up(spark, name, output, "first").published
    put_changes(kinesis, name, history[2 * third :])
    hold_one_shard_each(spark, name, output)

    meeting = BothAtTheirCommit(3)  # the two runs and the maintenance
    results: dict[str, RunReport | MaintenanceReport | BaseException] = {}

    def party(who: str, work: Any) -> threading.Thread:
        def body() -> None:
            try:
                results[who] = work()
            except BaseException as exc:
                results[who] = exc
            finally:
                meeting.done()

        return threading.Thread(target=body)

    # The real clock for maintenance: the runs' files written before it lists the table are young,
    # never orphans (tests/maintenance/test_with_catch_up.py says why).
    threads = [party(worker, lambda w=worker: catch_up(spark, name, output, w)) for worker in WORKERS]
    threads.append(party("maintain", lambda: maintain(sink_of(output), MaintainSettings(retain_hours=0))))
    with observing(meeting):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
    for worker in WORKERS:
        report = results[worker]
        assert isinstance(report, RunReport), report
        assert report.published and len(report.shards) == 1, report
    assert isinstance(results["maintain"], MaintenanceReport), results["maintain"]
    assert meeting.met, "the two merges and the maintenance met at their commits"
    assert not catch_up(spark, name, output, "later").published, "nothing was left to merge"
    assert table_state(read_rows(sink)) == oracle(history)

    # A week and a day later: every tombstone is past --tombstone-hours, the merged files compact.
    deleted = len({change.key for change in history if change.row is None})
    later = MaintainSettings(target_file_mb=64, retain_hours=0, tombstone_hours=168)
    report = maintain(sink_of(output), later, clock=lambda: time.time() + 169 * 3600)
    assert (report.tombstones_expired, report.tombstones_kept) == (deleted, 0), report
    assert report.after.files == 1, (report.before, report.after)  # the rows are far below the target size
    assert Tombstones(sink.table_sink().bookkeeping()).read(["pk", "sk"]) is None
    assert table_state(read_rows(sink)) == oracle(history)
