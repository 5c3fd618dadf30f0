"""Maintenance beside the catch-up runs of the same table.

- Together: a catch-up run and ``maintain`` each stop right before their commit (the run at
  ``staged``, maintenance at ``compacting``) until both are there, then commit at the same
  moment, several times in a row: each format's optimistic concurrency (reload, re-check,
  retry) keeps every record exactly once, and both finish.
- After a crash: a run killed between its publish and its checkpoint commit, then ``maintain``
  (which expires the commit that carried the batch's marker), then another worker's recovery:
  the checkpoints roll forward to where the batch ended, from the archived marker.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.events import Event, observing
from kinesis_batch.maintenance import MaintainSettings, MaintenanceReport, maintain
from kinesis_batch.parsers import default_table
from kinesis_batch.run import CatchUpRun, RunReport
from tests.output.support import output_args, read_rows, run_config, sink_of
from tests.run.test_catch_up import CrashingRun, SimulatedCrash, assert_settled, checkpoints
from tests.runs import assert_exactly_once, assert_per_key_order
from tests.streams import StreamFactory, put

KINDS = [("parquet", "local"), ("delta", "local"), ("delta", "s3"), ("iceberg", "local"), ("iceberg", "s3")]
IDS = [f"{format}-{where}" for format, where in KINDS]
#: Committing together: Delta's conflicts are deltalake's the same locally and on S3, so S3's;
#: Iceberg's are the catalog's compare-and-swap, with metadata local and on S3.
TOGETHER = [kind for kind in KINDS if kind != ("delta", "local")]
#: Recovery after expiry: the table formats (a parquet batch's marker is its folder's _commit.json,
#: which never expires).
TABLES = [kind for kind in KINDS if kind[0] != "parquet"]
ROUNDS = 3
LATER = MaintainSettings(retain_hours=0)


def two_hours_later() -> float:
    return time.time() + 2 * 3600


class BothAtTheirCommit:
    """An observer that holds runs at ``staged`` and a maintenance at ``compacting`` until all
    ``parties`` arrived (or one finished without getting there), then lets them go together."""

    def __init__(self, parties: int = 2) -> None:
        self.barrier = threading.Barrier(parties, timeout=60)
        self.met = False

    def __call__(self, event: Event) -> None:
        if event.step in ("staged", "compacting") and not self.barrier.broken:
            try:
                self.barrier.wait()
                self.met = True
            except threading.BrokenBarrierError:
                pass

    def done(self) -> None:
        """One side finished: the other must not wait for it."""
        self.barrier.abort()


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("format", "where"), TOGETHER, ids=[f"{format}-{where}" for format, where in TOGETHER])
def test_maintain_and_a_catch_up_committing_together_keep_every_record_exactly_once(
    format: str, where: str, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    name = streams.create(shards=4)
    output = output_args(format, where, tmp_path, monkeypatch)
    config = run_config(name, output, "catching-up", read_limits="none")
    sink = sink_of(output, app=default_table(name), stream=name)
    sent: list[str] = []
    met = 0
    sent += put(kinesis, name, 40)  # small files for the first maintenance to compact: one a task (2 slots)
    CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark).run()
    for _ in range(ROUNDS):
        sent += put(kinesis, name, 40, start=len(sent))
        meeting = BothAtTheirCommit()
        results: dict[str, RunReport | MaintenanceReport | BaseException] = {}

        def run(meeting: BothAtTheirCommit = meeting, results: dict[str, Any] = results) -> None:
            try:
                catch_up = CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark)
                results["run"] = catch_up.run()
            except BaseException as exc:
                results["run"] = exc
            finally:
                meeting.done()

        def maintenance(meeting: BothAtTheirCommit = meeting, results: dict[str, Any] = results) -> None:
            try:
                # The real clock: a file younger than an hour is never an orphan, which is what
                # keeps the run's new snapshot files (written before maintenance lists the table,
                # committed after it read the references) from being taken for orphans. Two hours
                # ahead, this test would delete them itself (as it once did, on Iceberg on S3).
                results["maintain"] = maintain(sink_of(output), LATER)
            except BaseException as exc:
                results["maintain"] = exc
            finally:
                meeting.done()

        with observing(meeting):
            threads = [threading.Thread(target=run), threading.Thread(target=maintenance)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=300)
        assert isinstance(results["run"], RunReport), results["run"]
        assert isinstance(results["maintain"], MaintenanceReport), results["maintain"]
        assert results["run"].published
        met += meeting.met

        rows = read_rows(sink)
        assert_exactly_once(rows, sent)
        assert_per_key_order(rows)
    assert met == ROUNDS, "the run and the maintenance met at their commits each round"


def in_the_tables_history(sink: Any, batch_id: str) -> bool:
    """Whether the commit that published ``batch_id`` is still in the table's own history."""
    table = sink._load()
    if sink.format == "iceberg":
        return sink._state(table, batch_id) is not None
    return any(commit.get("kinesis_batch.batch_id") == batch_id for commit in table.history())


@pytest.mark.parametrize(("format", "where"), TABLES, ids=[f"{format}-{where}" for format, where in TABLES])
def test_a_run_crashed_before_its_checkpoint_commit_rolls_forward_after_maintenance_expired_its_marker(
    format: str, where: str, kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    output = output_args(format, where, tmp_path, monkeypatch)
    sent = put(kinesis, name, 60)
    settings = {"read_limits": "none", "lease_seconds": 10}
    crashed = CrashingRun(
        run_config(name, output, "crasher", **settings), crash_at="published",
        kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark,
    )  # fmt: skip
    with pytest.raises(SimulatedCrash):
        crashed.run()
    sink = sink_of(output, app=default_table(name), stream=name)
    record = sink.committed(crashed.run_id)
    assert record is not None

    for _ in range(2):  # more commits after the batch's, so expiry has something to drop
        maintain(sink_of(output), LATER, clock=two_hours_later)
    assert not in_the_tables_history(sink, crashed.run_id), "expiry did not reach the batch's commit"
    assert crashed.run_id in sink.markers.archived()  # type: ignore[attr-defined]

    recovery = CatchUpRun(
        run_config(name, output, "recoverer", **settings), kinesis=kinesis, dynamodb=dynamodb,
        spark=lambda: spark, clock=lambda: time.time() + 60,
    ).run()  # fmt: skip

    assert set(recovery.recovered.values()) == {"rolled forward"}
    assert checkpoints(dynamodb, name) == {shard.shard_id: shard.end for shard in record.shards}
    assert not recovery.published, "the published batch was read again"
    assert_exactly_once(read_rows(sink), sent)
    assert_settled(dynamodb, name)
