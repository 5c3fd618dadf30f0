"""One catch-up run: recover -> plan -> lease -> prepare -> read/write -> publish -> commit -> release.

Exactly-once rests on three facts:
- a batch's output becomes visible in one atomic step of its sink (a folder rename, or the
  table's own commit), and its commit record travels with it (kinesis_batch.output);
- a checkpoint moves only after its batch is published, fenced by leaseOwner + leaseCounter;
- recovery (kinesis_batch.recovery) settles every pending batch before anything is read again.

The SparkContext is passed in (``spark``) so callers share one; pyspark is imported only here
and in ``kinesis_batch.spark``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NoReturn, Protocol

from kinesis_batch.aws import S3Settings
from kinesis_batch.checkpoints.store import DynamoDBCheckpointStore
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import InvalidStateError, KinesisBatchError, LeaseLostError, TrimmedDataError
from kinesis_batch.grouping import group_ranges
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.renewer import LeaseRenewer
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.output import Sink, open_sink
from kinesis_batch.output.records import CommitRecord, ShardCommit
from kinesis_batch.planning import (
    RunPlan,
    generations,
    parents_ended,
    plan_from_json,
    plan_run,
    plan_to_json,
    readable,
    shard_commit,
)
from kinesis_batch.recovery import recover_pending
from kinesis_batch.shards.lag import RetentionRisk
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards, retention_hours

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient
    from pyspark import SparkContext

log = logging.getLogger(__name__)
CRASH_AT = "KINESIS_BATCH_CRASH_AT"  # fault injection for the crash tests: a step name
FREEZE_AT = "KINESIS_BATCH_FREEZE_AT"  # the zombie tests: the driver stops itself (SIGSTOP) there
Progress = Callable[[str], None]


class Cancellable(Protocol):
    def cancel(self) -> None:
        """Stop at once, from any thread (the lease renewer's); the work then raises."""


class Read(Cancellable, Protocol):
    """A read step run elsewhere (a spark-submit): ``run`` reads, ``cancel`` stops it."""

    def run(self) -> None: ...


@dataclass(frozen=True)
class RunReport:
    run_id: str
    batch_id: str
    published: bool
    shards: tuple[ShardCommit, ...]
    recovered: dict[str, str]  # shard -> "rolled forward" | "discarded"
    leased_elsewhere: dict[str, str]
    waiting: dict[str, tuple[str, ...]]
    seconds: float
    output: str = ""
    # Where the time went: start (recover, plan, lease), spark_start, read (the job), publish, commit.
    timings: dict[str, float] = field(default_factory=dict)
    tasks: int = 0  # Spark tasks of the read, each a group of shards
    failed_task_attempts: int = 0  # task attempts that failed and were retried

    @property
    def records(self) -> int:
        return sum(s.records for s in self.shards)


def _s3() -> S3Settings:
    from kinesis_batch.aws import s3_settings

    return s3_settings()


def new_run_id() -> str:
    return f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:8]}"


class CatchUpRun:
    def __init__(
        self,
        config: RunConfig,
        *,
        kinesis: KinesisClient,
        dynamodb: DynamoDBClient,
        spark: Callable[[], SparkContext],
        progress: Progress = lambda message: None,
        clock: Callable[[], float] = time.time,
        run_id: str | None = None,
        sink: Sink | None = None,
    ) -> None:
        """``sink``: where batches are published; by default the one ``config`` names, with S3
        settings from the standard AWS environment."""
        self.config = config
        self.kinesis = kinesis
        self.spark = spark
        self.progress = progress
        self.store = LeaseStore(dynamodb, config.table)
        self.checkpoints = DynamoDBCheckpointStore(self.store, initial=config.initial_position)
        self.output = sink or open_sink(
            config.format, config.output, app=config.table, stream=config.stream, catalog=config.catalog, s3=_s3()
        )
        self.manager = LeaseManager(self.store, config.worker_id, config.lease_seconds, clock=clock)
        self.run_id = run_id or new_run_id()  # also the batch id
        self.clock = clock
        self.retention_hours = 24
        self.timings: dict[str, float] = {}
        self._job: Cancellable | None = None  # the read in progress, for the renewer to cancel
        self.tasks = self.failed_task_attempts = 0

    # -- the steps ----------------------------------------------------------------------------

    def run(self, read: Read | None = None) -> RunReport:
        """Every step in this process, with the leases renewed throughout (the command line).
        ``read``: the read step run elsewhere (a spark-submit), instead of :meth:`read` here."""
        started = time.monotonic()
        try:
            with self._timed("start"):
                recovered, plan, elsewhere = self.start()
            with self.renewing():
                if read is None:
                    self.read()
                else:
                    self.read_elsewhere(read)
                self.crash_point("read")
                with self._timed("publish"):
                    published = self.publish()
                self.crash_point("published")
                with self._timed("commit"):
                    self.commit()
                self.crash_point("committed")
        except BaseException:
            try:
                self.finish()
            except KinesisBatchError as exc:  # the first error is the one to report
                log.warning("teardown after a failed run also failed: %s", exc)
            raise
        self.finish()
        record = self.output.committed(self.run_id) if published else None
        return RunReport(
            run_id=self.run_id,
            batch_id=self.run_id,
            published=published,
            shards=record.shards if record else (),
            recovered=recovered,
            leased_elsewhere=elsewhere,
            waiting=dict(plan.waiting),
            seconds=time.monotonic() - started,
            output=self.output.location(self.run_id) if published else "",
            timings={step: round(seconds, 3) for step, seconds in self.timings.items()},
            tasks=self.tasks,
            failed_task_attempts=self.failed_task_attempts,
        )

    @contextmanager
    def _timed(self, step: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.timings[step] = self.timings.get(step, 0.0) + time.monotonic() - started

    @contextmanager
    def renewing(self) -> Iterator[None]:
        """Hold this worker's leases (again, in a step's own process) and renew them until the
        block ends; a lease lost meanwhile cancels the read in progress. One process renews a
        run's leases at a time: a renewal bumps the counter the others would fence with."""
        self.manager.adopt()
        with LeaseRenewer(self.manager, on_lost=self._on_lost):
            yield

    # -- the steps: each may run in a process of its own (state: lease table + batch staging) --

    def start(self) -> tuple[dict[str, str], RunPlan, dict[str, str]]:
        """Recover, plan, take leases, mark them with the batch, write the plan manifest.

        Returns (recovered shards, plan, shards leased elsewhere -> owner).
        """
        # Validate the stream before creating anything (tables, folders) for it.
        self.retention_hours = retention_hours(self.kinesis, self.config.stream)
        self.output.prepare()
        self.checkpoints.create_checkpoint_store_if_not_exists()
        lineage, leases = self.survey()
        recovered = self.recover(leases)
        if recovered:
            lineage, leases = self.survey()
        plan = self._plan(lineage, leases)
        self.manager.ensure_leases(plan.new_leases)
        taken = self.manager.take(plan.shard_ids)
        # Plan again from the leases as taken: another run may have committed (and released) a
        # shard between our first look and the take; its old checkpoint would read records twice.
        plan = self._plan(lineage, {lease.lease_key: lease for lease in self.store.list_leases()})
        self.manager.release([key for key in self.manager.held() if key not in set(plan.shard_ids)])
        elsewhere = {**plan.leased_elsewhere, **taken.held_elsewhere}
        elsewhere.update({key: "(lost race)" for key in taken.lost_race})
        bound = plan.until.isoformat() if plan.until else "the tip"
        self.progress(
            f"plan: {len(plan.ranges)} shards in {len(plan.waves())} waves, {len(plan.finished)} finished, "
            f"{len(elsewhere)} leased elsewhere, {len(plan.waiting)} waiting for parents; bound {bound}"
        )
        self._prepare(self.run_id)
        self.output.write_manifest(self.run_id, plan_to_json(plan))
        self.crash_point("prepared")
        return recovered, plan, elsewhere

    def plan(self) -> RunPlan:
        """What a run would read now, without reading, leasing or creating anything."""
        self.retention_hours = retention_hours(self.kinesis, self.config.stream)
        if not self.store.table_exists():  # the first run will create it
            return self._plan(Lineage.build(list_shards(self.kinesis, self.config.stream)), {})
        return self._plan(*self.survey())

    def _plan(self, lineage: Lineage, leases: dict[str, Lease]) -> RunPlan:
        return plan_run(
            self.config.stream,
            lineage,
            leases,
            worker_id=self.config.worker_id,
            now_ms=self.manager.now_ms(),
            initial=self.config.initial_position,
            until=self.config.until,
        )

    def survey(self) -> tuple[Lineage, dict[str, Lease]]:
        leases = {lease.lease_key: lease for lease in self.store.list_leases()}
        depths = {key: lease.lineage_depth for key, lease in leases.items() if lease.lineage_depth is not None}
        return Lineage.build(list_shards(self.kinesis, self.config.stream), known_depths=depths), leases

    def recover(self, leases: dict[str, Lease]) -> dict[str, str]:
        return recover_pending(leases, self.manager, self.checkpoints, self.output, self.progress)

    def _prepare(self, batch_id: str) -> None:
        """Mark every held lease with the batch before anything is written (its end is not known yet)."""
        self.manager.write_each(
            sorted(self.manager.held()), lambda lease: self.checkpoints.prepare(lease, lease.checkpoint, batch_id)
        )

    def read(self) -> None:
        """Run one Spark job over the held shards of the plan, a group of ranges per task; a
        child is read once every parent reached SHARD_END, in the same task (no wave barrier).
        Rows go to the batch's staging, what each range read to _results. A lease lost meanwhile
        (the renewer of :meth:`run` cancels the job) raises LeaseLostError; an error inside a
        task is raised as the library's own error."""
        from kinesis_batch.spark.job import ReadJob, read_results, warm_up
        from kinesis_batch.spark.task import GroupSpec

        plan = self._manifest()
        held = set(self.manager.adopt())
        ranges = readable(plan.ranges, held)
        if not ranges:
            return
        data = self.output.data(self.run_id)
        self.output.clear_staged_rows(self.run_id)  # an earlier attempt of this step
        data.make_dirs()
        results_dir = self.output.results(self.run_id)
        with self._timed("spark_start"):  # once, outside the read's timing
            spark = self.spark()
            warm_up(spark)
        groups = group_ranges(ranges, slots=spark.defaultParallelism, shards_per_task=self.config.shards_per_task)
        column = None if self.output.format == "parquet" else self.run_id  # parquet has it from the folder
        specs = [GroupSpec.of(self.config, self.kinesis, group, plan.until, data, column) for group in groups]
        self._job = job = ReadJob(spark, self.run_id)
        started = time.monotonic()
        try:
            with self._timed("read"):
                job.run(specs, results_dir)
        except Exception as exc:
            self._raise_read_failure(exc)
        finally:
            self.tasks, self.failed_task_attempts = job.tasks, job.failed_attempts
            self._job = None
        seconds = time.monotonic() - started
        results = read_results(results_dir)
        missing = [r.shard_id for r in ranges if r.shard_id not in results and parents_ended(r, results)]
        if missing:
            raise InvalidStateError(f"the Spark job reported nothing for shards {', '.join(missing)}")
        self._check_gaps({shard: result.trimmed_after for shard, result in results.items()})
        for shard_range in ranges:
            result = results.get(shard_range.shard_id)
            if result is None:
                self.progress(f"  {shard_range.shard_id}: not read, a parent stopped at the bound")
                continue
            moved = shard_commit(shard_range, result)
            now_at = moved.end if moved else shard_range.start
            self._warn_about_retention(shard_range.shard_id, result.first_millis_behind_latest)
            self.progress(f"  {shard_range.shard_id}: {result.records} records, now at {now_at}")
        records = sum(result.records for result in results.values())
        retried = f"; {self.failed_task_attempts} failed task attempts retried" if self.failed_task_attempts else ""
        self.progress(
            f"read: {len(results)} shards in {len(specs)} tasks, {records} records in {seconds:.1f} s "
            f"({records / max(seconds, 1e-9):,.0f} rec/s){retried}"
        )

    def read_elsewhere(self, read: Read) -> None:
        """The read step in another process (a spark-submit of ``--step read``), while this one
        holds and renews the leases: a lease lost meanwhile stops it and raises LeaseLostError."""
        self._job = read
        try:
            with self._timed("read"):
                read.run()
        except Exception as exc:
            self._raise_read_failure(exc)
        finally:
            self._job = None

    def _raise_read_failure(self, exc: Exception) -> NoReturn:
        """A failed or cancelled read: a lost lease explains it first, then a task's own error.
        Read-only: the process that renews the leases may be another one."""
        from kinesis_batch.spark.job import raised_in_task

        lost = self.manager.lost_leases()
        if not lost:
            with contextlib.suppress(KinesisBatchError):  # cannot tell now: the task's error stands
                lost = self.manager.taken_over()
        if lost:
            raise LeaseLostError(self._lost(lost, "while reading")) from exc
        error = raised_in_task(exc)
        if error is None:
            raise exc
        raise error from exc

    def _lost(self, keys: set[str], when: str) -> str:
        """One line naming the lost shards and the worker that has them now."""
        holders: dict[str, list[str]] = {}
        for lease in self.store.list_leases():
            if lease.lease_key in keys:
                holders.setdefault(self._holder(lease), []).append(lease.lease_key)
        lost = "; ".join(f"{', '.join(sorted(shards))} to {holder}" for holder, shards in sorted(holders.items()))
        return f"lost the leases of {lost} {when}; nothing was published"

    def _holder(self, lease: Lease) -> str:
        if lease.lease_owner:
            return lease.lease_owner
        moves = self.checkpoints.history.for_shard(lease.lease_key)
        if moves and moves[-1].owner != self.config.worker_id:  # it took over, finished, let go
            return f"{moves[-1].owner} (which committed batch {moves[-1].batch_id} and let go)"
        return "another worker (which let go since)"

    def _on_lost(self, lost: list[str]) -> None:
        """The renewer found leases lost: stop the read at once, if one is running."""
        job = self._job
        if job is not None:
            log.warning("lost leases %s: stopping the read", ", ".join(lost))
            job.cancel()

    def _check_gaps(self, trimmed: dict[str, str | None]) -> None:
        """Promise 5: data lost to retention fails the run, unless the user opted in (--allow-gaps)."""
        gaps = {shard: after for shard, after in sorted(trimmed.items()) if after}
        if not gaps:
            return
        where = ", ".join(f"{shard} after {after}" for shard, after in gaps.items())
        if not self.config.allow_gaps:
            raise TrimmedDataError(
                f"retention trimmed records the checkpoints point at ({where}); nothing was published. "
                "Rerun with --allow-gaps to record the gap and go on"
            )
        self.progress(f"WARNING: records lost to retention ({where}); recorded in the batch's commit record")

    def _warn_about_retention(self, shard_id: str, backlog_millis: int | None) -> None:
        """Warn when a backlog's age comes close to the retention period (it will be trimmed)."""
        if backlog_millis and RetentionRisk.judge(backlog_millis / 1000, self.retention_hours) is not RetentionRisk.OK:
            self.progress(
                f"WARNING: {shard_id}'s backlog was {backlog_millis / 3_600_000:.1f} h old when read, "
                f"retention is {self.retention_hours} h: run more often or raise the retention"
            )

    def publish(self) -> bool:
        """Record each shard's end on its lease, check every lease is still ours, then publish the
        batch (the sink's one atomic step). False when there was nothing new to publish."""
        from kinesis_batch.spark.job import read_results, staged_files

        batch_id = self.run_id
        if self.output.committed(batch_id) is not None:
            return True  # a retried publish step: the batch (and its bookkeeping) is already in
        plan = self._manifest()
        self.manager.adopt()
        results = read_results(self.output.results(batch_id))
        # In plan order, so parents come before their children in the record and the commits.
        commits = [
            moved
            for r in plan.ranges
            if r.shard_id in results and (moved := shard_commit(r, results[r.shard_id])) is not None
        ]
        ends = {commit.shard_id: commit.end for commit in commits}
        self.manager.write_each(
            ends,
            lambda lease: self.checkpoints.prepare(
                lease, ends[lease.lease_key], batch_id, read_through=ends[lease.lease_key]
            ),
        )
        lost = self.manager.lost_leases() | set(self.manager.renew())
        if lost:
            raise LeaseLostError(self._lost(lost, "before publishing"))
        if not commits:
            # The job ran but found nothing new: no empty batch. No fence either: this run
            # holds its leases (just checked) and will not publish the batch later.
            self.output.discard(batch_id, fence=False)
            return False
        record = CommitRecord(batch_id, self.run_id, self.config.stream, datetime.now(UTC), tuple(commits))
        files = sorted(staged_files(self.output.results(batch_id)))
        self.crash_point("staged")
        return self.output.publish(record, files) or self.output.committed(batch_id) is not None

    def commit(self) -> int:
        """Move the checkpoints of the published batch, a generation at a time, parents first;
        clear the marker of every held shard it does not cover. Returns how many moved."""
        self.manager.adopt()
        batch_id = self.run_id
        record = self.output.committed(batch_id)
        commits = record.shards if record else ()
        by_shard = {commit.shard_id: commit for commit in commits}
        # A generation (shards whose parents in the batch moved before) side by side, as many
        # transactions in flight as config.commit_concurrency says.
        held = self.manager.held()
        parents = {shard: held[shard].parent_shard_ids for shard in by_shard if shard in held}
        for generation in generations(list(by_shard), parents):
            self.manager.write_each(
                generation,
                lambda lease: self.checkpoints.commit(
                    lease,
                    batch_id,
                    run_id=self.run_id,
                    records=by_shard[lease.lease_key].records,
                    lag_at_start_ms=by_shard[lease.lease_key].lag_at_start_ms,
                ),
                concurrency=self.config.commit_concurrency,
            )
        uncovered = sorted(set(self.manager.held()) - set(by_shard))
        self.manager.write_each(uncovered, lambda lease: self.checkpoints.abort(lease, batch_id))
        return len(commits)

    def finish(self) -> list[str]:
        """The teardown, also after a failure: an unpublished batch is discarded and its markers
        cleared; every lease this run holds is released. Returns the keys released."""
        if not self.store.table_exists():
            return []  # the run failed before it created or leased anything
        self.manager.adopt()
        if self.output.committed(self.run_id) is None:
            self._abandon(self.run_id)
        return self.manager.release()

    def _manifest(self) -> RunPlan:
        body = self.output.read_manifest(self.run_id)
        if body is None:
            raise InvalidStateError(f"run {self.run_id} has no plan in {self.output.uri}: run its start step first")
        return plan_from_json(body)

    def _abandon(self, batch_id: str) -> None:
        """Best effort after a failure before publish: discard the batch (fenced: a task of this
        run that is still alive somewhere must not publish it later), clear our markers."""
        self.output.discard(batch_id)
        for key in sorted(self.manager.held()):
            try:
                with self.manager.fenced(key) as settle:
                    settle(self.checkpoints.abort(self.manager.lease(key), batch_id))
            except KinesisBatchError as exc:  # recovery by the next run clears what is left
                log.warning("could not clear pending batch %s on %s: %s", batch_id, key, exc)

    def crash_point(self, step: str) -> None:
        """A named step of the run. The crash tests set KINESIS_BATCH_CRASH_AT to one of them to
        kill -9 the whole process group (Spark's JVM included) exactly there; the zombie tests set
        KINESIS_BATCH_FREEZE_AT to freeze the driver there, as a long GC pause would."""
        log.debug("run %s: %s", self.run_id, step)
        if os.environ.get(CRASH_AT) == step:
            os.killpg(os.getpgrp(), signal.SIGKILL)
        if os.environ.get(FREEZE_AT) == step:
            os.kill(os.getpid(), signal.SIGSTOP)


__all__ = ["CatchUpRun", "RunReport", "new_run_id"]
