"""One catch-up run in-process (CatchUpRun with the shared Spark session) against the real local
endpoints: fencing when a lease is lost mid-run (a read here or spark-submitted), recovery of
batches a crash left behind, clean-up after a failure in the Spark step, per-key order across a
reshard diamond.

Every assertion reads real state back: lease items through LeaseStore, files under the output root.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import Checkpoint, Lease, LeaseLostError, LeaseManager, LeaseStore, Lineage, events, list_shards
from kinesis_batch.config import RunConfig
from kinesis_batch.output.parquet import ParquetSink
from kinesis_batch.parsers import default_table
from kinesis_batch.run import CatchUpRun, RunReport
from kinesis_batch.spark.cluster import Submission
from tests.runs import Thief, assert_exactly_once, assert_per_key_order, diamond_stream, read_output
from tests.streams import StreamFactory, open_shards, put, split

LEASE_SECONDS = 30  # long enough that no lease lapses under a live run here


def catch_up(
    name: str,
    output: Path,
    worker_id: str,
    *,
    kinesis: Any,
    dynamodb: Any,
    spark: Callable[[], Any],
    lease_seconds: float = LEASE_SECONDS,
    clock: Callable[[], float] = time.time,
    run_class: type[CatchUpRun] = CatchUpRun,
    **extra: Any,
) -> CatchUpRun:
    config = RunConfig.of(stream=name, output=str(output), worker_id=worker_id, lease_seconds=lease_seconds)
    return run_class(config, kinesis=kinesis, dynamodb=dynamodb, spark=spark, clock=clock, **extra)


def leases(dynamodb: Any, name: str) -> dict[str, Lease]:
    return {lease.lease_key: lease for lease in LeaseStore(dynamodb, default_table(name)).list_leases()}


def checkpoints(dynamodb: Any, name: str) -> dict[str, Checkpoint]:
    return {key: lease.checkpoint for key, lease in leases(dynamodb, name).items()}


def staged_batches(output: Path) -> list[str]:
    staging = output / "_staging"
    return sorted(p.name for p in staging.iterdir()) if staging.exists() else []


def assert_settled(dynamodb: Any, name: str) -> None:
    """No lease held, no batch pending."""
    for key, lease in leases(dynamodb, name).items():
        assert lease.lease_owner is None, f"{key} still held by {lease.lease_owner}"
        assert lease.pending_batch_id is None, f"{key} still has pending batch {lease.pending_batch_id}"


class SimulatedCrash(BaseException):
    """Stands for kill -9 at a crash point (a BaseException: no `except Exception` catches it)."""


class CrashingRun(CatchUpRun):
    """A run that dies at ``crash_at`` the way kill -9 would: none of its clean-up happens.

    An observer of its steps raises SimulatedCrash at ``crash_at``; the run's own teardown
    still executes in-process, but a killed process runs none, so ``finish`` does nothing once
    crashed: the leases stay owned by this worker until they expire, and an unpublished batch
    stays staged.
    """

    def __init__(self, config: RunConfig, *, crash_at: str, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.crash_at = crash_at
        self.crashed = False

    def run(self, read: Any = None) -> RunReport:
        with events.observing(self._crash):
            return super().run(read)

    def _crash(self, event: events.Event) -> None:
        if event.batch_id == self.run_id and event.step == self.crash_at:
            self.crashed = True
            raise SimulatedCrash(event.step)

    def finish(self) -> list[str]:
        return [] if self.crashed else super().finish()


def test_a_run_that_loses_a_lease_mid_way_publishes_nothing_and_moves_no_checkpoint(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    output = tmp_path / "out"
    sent = put(kinesis, name, 200)
    run = dict(kinesis=kinesis, dynamodb=dynamodb)
    first = catch_up(name, output, "first", spark=lambda: spark, **run).run()
    assert first.published and first.records == len(sent)
    before = checkpoints(dynamodb, name)
    assert len(before) == 2 and not any(cp.is_start for cp in before.values()), before
    more = put(kinesis, name, 200, start=len(sent))

    # Right before the first wave, another worker takes one of the run's leases (as it may once
    # the lease expired): the run must notice before publishing.
    victim = sorted(before)[0]
    thief = LeaseManager(LeaseStore(dynamodb, default_table(name)), "thief", LEASE_SECONDS)
    thefts: list[str] = []

    def spark_after_theft() -> Any:
        if not thefts:
            taken = thief.take([victim], force=True)
            thefts.extend(lease.lease_key for lease in taken.acquired)
        return spark

    losing = catch_up(name, output, "loser", spark=spark_after_theft, **run)
    with pytest.raises(LeaseLostError, match=victim):
        losing.run()
    assert thefts == [victim]

    out = ParquetSink(output)
    assert out.published_batches() == [first.batch_id], "the losing run published a batch"
    assert not Path(out.staging(losing.run_id).uri).exists(), "the losing run left its staging"
    assert staged_batches(output) == []
    assert_exactly_once(read_output(output), sent)
    assert checkpoints(dynamodb, name) == before, "a run that lost a lease moved a checkpoint"
    after = leases(dynamodb, name)
    assert after[victim].lease_owner == "thief", "the losing run released (or took back) the stolen lease"
    # The loser's attempt to clear its marker on the stolen lease is fenced out: recovery settles it.
    assert after[victim].pending_batch_id == losing.run_id
    for key, lease in after.items():
        if key != victim:
            assert lease.lease_owner is None and lease.pending_batch_id is None, lease

    assert thief.release() == [victim]
    third = catch_up(name, output, "third", spark=lambda: spark, **run).run()
    assert third.published and third.records == len(more)
    assert third.recovered == {victim: "discarded"}  # never published: nothing to roll forward
    assert_exactly_once(read_output(output), sent + more)
    assert out.published_batches() == sorted([first.batch_id, third.batch_id])
    assert staged_batches(output) == []
    assert_settled(dynamodb, name)


@pytest.mark.parametrize(
    ("step", "outcome"), [("published", "rolled forward"), ("staged", "discarded")], ids=["published", "staged"]
)
def test_recovery_settles_the_batch_a_crashed_run_left(
    step: str, outcome: str, kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    output = tmp_path / "out"
    sent = put(kinesis, name, 300)
    run = dict(kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark)
    out = ParquetSink(output)

    crashed = catch_up(name, output, "crasher", lease_seconds=10, run_class=CrashingRun, crash_at=step, **run)
    with pytest.raises(SimulatedCrash):
        crashed.run()
    batch = crashed.run_id
    left = leases(dynamodb, name)
    assert len(left) == 2
    for key, lease in left.items():
        assert lease.pending_batch_id == batch, f"{key}: the crash left no pending batch"
        assert lease.lease_owner == "crasher", f"{key}: the dead worker's lease is not held"
        assert lease.checkpoint == Checkpoint.trim_horizon(), f"{key}: checkpoint moved before commit"
    if step == "published":
        assert out.published_batches() == [batch]
        record = out.committed(batch)
        assert record is not None and {s.shard_id for s in record.shards} == set(left)
    else:
        assert out.published_batches() == []
        assert any(Path(out.staging(batch).uri).rglob("part-*.parquet")), "the crash left no staged batch"

    # Another worker, 60 s later by its clock: the dead worker's 10 s leases have expired.
    recovery = catch_up(name, output, "recoverer", clock=lambda: time.time() + 60, **run).run()
    assert recovery.recovered == dict.fromkeys(left, outcome)
    assert not Path(out.staging(batch).uri).exists()
    rows = read_output(output)
    assert_exactly_once(rows, sent)
    assert_settled(dynamodb, name)
    if step == "published":
        assert not recovery.published and recovery.records == 0, "the published batch was read again"
        assert out.published_batches() == [batch]
        assert out.committed(batch) == record
        assert checkpoints(dynamodb, name) == {s.shard_id: s.end for s in record.shards}  # type: ignore[union-attr]
    else:
        assert recovery.published and recovery.records == len(sent)
        assert out.published_batches() == [recovery.batch_id]
        assert set(rows["batch_id"]) == {recovery.batch_id}
        assert checkpoints(dynamodb, name) == {s.shard_id: s.end for s in recovery.shards}
    assert staged_batches(output) == []


def test_a_failure_in_the_spark_step_leaves_nothing_pending_staged_or_held(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kinesis_batch.spark import job

    name = streams.create(shards=1)
    sent = put(kinesis, name, 150)
    (parent,) = open_shards(kinesis, name)
    split(kinesis, name, parent)
    sent += put(kinesis, name, 150, start=len(sent))
    output = tmp_path / "out"
    out = ParquetSink(output)
    staged: list[bool] = []  # whether the job had staged Parquet when it failed
    run_job = job.ReadJob.run

    def failing_after_staging(self: Any, *args: Any) -> None:
        run_job(self, *args)
        staged.append(any(Path(out.staging(failing.run_id).uri).rglob("*.parquet")))
        raise RuntimeError("Spark job aborted: executor lost")

    monkeypatch.setattr(job.ReadJob, "run", failing_after_staging)
    failing = catch_up(name, output, "failing", spark=lambda: spark, kinesis=kinesis, dynamodb=dynamodb)
    with pytest.raises(RuntimeError, match="executor lost"):
        failing.run()
    assert staged == [True], "the failure did not come after the job had staged output"
    monkeypatch.undo()
    assert not Path(out.staging(failing.run_id).uri).exists(), "the failed run left its staging"
    assert staged_batches(output) == [] and out.published_batches() == []
    assert read_output(output) == {}
    left = leases(dynamodb, name)
    assert len(left) == 3
    assert all(lease.checkpoint == Checkpoint.trim_horizon() for lease in left.values()), left
    assert_settled(dynamodb, name)

    report = catch_up(name, output, "next", spark=lambda: spark, kinesis=kinesis, dynamodb=dynamodb).run()
    assert report.published and report.records == len(sent) and report.recovered == {}
    assert_exactly_once(read_output(output), sent)
    assert checkpoints(dynamodb, name)[parent.shard_id] == Checkpoint.shard_end()
    assert_settled(dynamodb, name)


def test_a_teardown_whose_own_settling_fails_still_releases_the_leases_and_reports_the_first_error(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=2)
    sent = put(kinesis, name, 40)
    output = tmp_path / "out"

    tried: list[bool] = []
    look_up = ParquetSink.committed

    def publish_fails(self: Any, *args: Any) -> bool:
        tried.append(True)
        raise KeyError("a publish's bug")

    def lookup_fails(self: ParquetSink, batch_id: str) -> Any:  # the teardown's (a roll-forward) fails too
        if tried:
            raise RuntimeError("a roll-forward's bug")
        return look_up(self, batch_id)

    monkeypatch.setattr(ParquetSink, "publish", publish_fails)
    monkeypatch.setattr(ParquetSink, "committed", lookup_fails)
    failing = catch_up(name, output, "failing", spark=lambda: spark, kinesis=kinesis, dynamodb=dynamodb)
    with pytest.raises(KeyError, match="a publish's bug"):
        failing.run()
    monkeypatch.undo()
    held = {key: lease.lease_owner for key, lease in leases(dynamodb, name).items()}
    assert held and set(held.values()) == {None}, held

    report = catch_up(name, output, "next", spark=lambda: spark, kinesis=kinesis, dynamodb=dynamodb).run()
    assert report.published and report.leased_elsewhere == {} and report.records == len(sent)
    assert_exactly_once(read_output(output), sent)
    assert_settled(dynamodb, name)


def test_rows_carry_lineage_depth_and_recover_per_key_order_across_a_diamond(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 100)
    output = tmp_path / "out"
    report: RunReport = catch_up(name, output, "diamond", spark=lambda: spark, kinesis=kinesis, dynamodb=dynamodb).run()
    assert report.published and report.records == len(sent) and report.waiting == {}

    rows = read_output(output)
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
    lineage = Lineage.build(list_shards(kinesis, name))
    depths = dict(zip(rows["shard_id"], rows["lineage_depth"], strict=True))
    assert depths == {shard: lineage.depth(shard) for shard in depths}
    assert max(depths.values()) == 2  # the diamond's merge child
    # Parents were committed before children: every closed shard's checkpoint is SHARD_END.
    shards = {s.shard_id: s for s in list_shards(kinesis, name)}
    for key, checkpoint in checkpoints(dynamodb, name).items():
        assert checkpoint.is_shard_end == shards[key].closed, (key, checkpoint)
    assert_settled(dynamodb, name)


class _SurveyedEarly(CatchUpRun):
    """A run whose look at the lease table happened before another run committed."""

    def __init__(self, config: RunConfig, *, stale: dict[str, Lease], **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self._stale = stale

    def survey(self) -> tuple[Lineage, dict[str, Lease]]:
        lineage, _ = super().survey()
        return lineage, self._stale


def test_a_checkpoint_moved_between_survey_and_take_is_not_read_again(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    sent = put(kinesis, name, 300)
    output = tmp_path / "out"
    catch_up(name, output, "first", kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark).run()
    before_other = leases(dynamodb, name)
    more = put(kinesis, name, 100, start=300)
    catch_up(name, output, "other", kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark).run()  # commits, releases

    late = catch_up(
        name,
        output,
        "late",
        kinesis=kinesis,
        dynamodb=dynamodb,
        spark=lambda: spark,
        run_class=_SurveyedEarly,
        stale=before_other,
    )
    report = late.run()

    assert report.records == 0 and not report.published
    assert_exactly_once(read_output(output), sent + more)


def test_a_lease_lost_while_a_submitted_read_runs_kills_it_at_once_with_one_line(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    # The read step elsewhere (what the orchestrators spark-submit), standing in as a process that
    # would read for a minute; this process renews the leases meanwhile, as their task does.
    name = streams.create(shards=1)
    put(kinesis, name, 10)
    (shard,) = open_shards(kinesis, name)
    config = RunConfig.of(stream=name, output=str(tmp_path / "out"), worker_id="w", lease_seconds=10)
    run = CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: None)
    run.start()
    said: list[str] = []
    read = Submission(["sh", "-c", "echo reading; sleep 60"], {}, said.append)

    with Thief(dynamodb, name, shard.shard_id, ready=lambda: bool(said)) as thief:
        started = time.monotonic()
        with pytest.raises(LeaseLostError) as raised, run.renewing():
            run.read_elsewhere(read)
        seconds = time.monotonic() - started

    assert thief.took

    assert str(raised.value) == f"lost the leases of {shard.shard_id} to thief while reading; nothing was published"
    assert seconds < 10, f"the submit went on for {seconds:.1f} s after the lease was lost (renewals: every 3.3 s)"
    assert not read.running(), "the submit still runs"
