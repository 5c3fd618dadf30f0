"""One catch-up run of one stream: its steps, in order. Each step is a module of this package;
this facade only composes them. Exactly-once rests on three facts:

- a batch's output becomes visible in one atomic step of its sink (a folder rename, or the
  table's own commit), and its commit record travels with it (kinesis_batch.output);
- a checkpoint moves only after its batch is published, fenced by leaseOwner + leaseCounter;
- settling (recovery) finishes every pending batch before anything is read again.

The Spark session is passed in (``spark``, started on first use) so callers share one; pyspark
is imported only by the read step and kinesis_batch.spark.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from kinesis_batch import binding, ownership
from kinesis_batch.aws import assume_now
from kinesis_batch.columns import RAW, decoded
from kinesis_batch.config import NONE
from kinesis_batch.decoding.resolve import resolve
from kinesis_batch.errors import ShutdownError
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.renewer import LeaseRenewer
from kinesis_batch.planning import RunPlan
from kinesis_batch.run import commit as committing
from kinesis_batch.run import job_run
from kinesis_batch.run import lease as leasing
from kinesis_batch.run import publish as publishing
from kinesis_batch.run import read as reading
from kinesis_batch.run import release as releasing
from kinesis_batch.run import survey as surveying
from kinesis_batch.run.context import RunContext
from kinesis_batch.run.report import RunReport
from kinesis_batch.run.settle import recover_pending
from kinesis_batch.shards.lineage import Lineage

log = logging.getLogger(__name__)
T = TypeVar("T")


class CatchUpRun(RunContext):
    """``CatchUpRun(config, kinesis=..., dynamodb=..., spark=...).run()`` runs every step in this
    process with the leases renewed throughout. Each step may also run in a process of its own
    (the DAG's tasks: ``start``, ``read``, ``publish``, ``commit``, ``finish``), finding the
    run's state in the lease table and the batch's staging. The constructor is
    :class:`~kinesis_batch.run.context.RunContext`'s: what every step works with."""

    def run(self, read: reading.Read | None = None) -> RunReport:
        """Every step; ``read``: the read step run elsewhere (a spark-submit) instead of here.
        A stop asked for meanwhile (``stop``) ends it at the next safe point with ShutdownError
        (see :meth:`honouring_stop`). What the run tells the outside (its OpenLineage events, its
        metrics) its steps send (kinesis_batch.run.observe)."""
        started = time.monotonic()

        def steps() -> tuple[tuple[dict[str, str], RunPlan, dict[str, str]], bool]:
            began = self.start()
            self.stop.check("before reading")
            with self.renewing():
                self.read() if read is None else self.read_elsewhere(read)
                self.stop.check("before publishing")
                published = self.publish()  # under way: a stop now waits for it, and its commit
                self.commit()
            return began, published

        try:
            (recovered, plan, elsewhere), published = self.honouring_stop(steps)
        except BaseException as exc:
            if isinstance(exc, ShutdownError) or self.stop.requested:  # honouring_stop did the stop's teardown
                raise
            with releasing.after_failure():
                self.finish()
            raise
        self.finish()
        record = self.output.committed(self.run_id) if published else None
        return RunReport(
            run_id=self.run_id,
            batch_id=self.run_id,
            record=record,
            recovered=recovered,
            leased_elsewhere=elsewhere,
            waiting=dict(plan.waiting),
            seconds=time.monotonic() - started,
            output=self.output.location(self.run_id) if published else "",
            timings=self.timings.rounded(),
            tasks=self.tasks,
            failed_task_attempts=self.failed_task_attempts,
            job_run=self.job_run,
            control_plane=self.control_plane_met(),
        )

    def honouring_stop(self, call: Callable[[], T]) -> T:
        """``call`` (every step, or one step run on its own: an Airflow task), then, when a stop
        was asked for meanwhile, the teardown a stop owes and its one line, as ShutdownError: a
        batch that is published (a publish under way finishes) has its checkpoints committed;
        one that is not is discarded, fenced; every lease is released. The error it ends with
        is the run's OpenLineage FAIL (or ABORT)."""
        try:
            return self._honouring_stop(call)
        except BaseException as exc:
            self.observer.failed(exc)
            raise

    def _honouring_stop(self, call: Callable[[], T]) -> T:
        try:
            result = call()
        except ShutdownError as exc:
            if exc.signal_number is None:
                raise
            raise self._stopped() from exc
        except BaseException:
            if not self.stop.requested:
                raise
            self._stopped()  # the stop's teardown; the step's own error is the one to report
            raise
        if self.stop.requested:
            raise self._stopped()
        return result

    def _stopped(self) -> ShutdownError:
        record = self.output.committed(self.run_id)
        released: list[str] | None = None
        with releasing.after_failure():
            try:
                if record is not None:
                    committing.commit(self, record)  # not the step: the run ends as the stop, not COMPLETE
            finally:
                released = self.finish()
        if record is not None:
            done = (
                f"batch {self.run_id} published ({record.records} records from {len(record.shards)} shards) "
                "and its checkpoints committed"
            )
        else:
            done = f"batch {self.run_id} discarded before it was published: nothing published, no checkpoint moved"
        if released is None:
            left = f"its leases could not be released: they lapse within {self.config.lease_seconds:g} s"
        else:
            left = f"{len(released)} leases released; the next run goes on from the checkpoints"
        return self.stop.error(f"{done}; {left}")

    def start(self) -> tuple[dict[str, str], RunPlan, dict[str, str]]:
        """Resolve the decoding settings (bad input ends here, before anything is made), check the
        table is this stream's and publishes to this output (kinesis_batch.binding), check the
        output's place and prepare it, record the output in the table's mark, settle, survey and
        plan, take the leases and mark them with the batch, write the plan. Returns (settled
        shards, plan, shards leased elsewhere -> owner). Its START is the run's (OpenLineage)."""
        with self.timings.step("start"):
            self.observer.started()
            return self._start()

    def _start(self) -> tuple[dict[str, str], RunPlan, dict[str, str]]:
        config = self.config
        decode = (
            resolve(config.decoding, self.glue, config.changes, config.routing) if config.decoding.decoding else None
        )
        if config.settings.role_arn:
            assume_now(self.kinesis, config.settings.role_arn)  # before anything is made
        if self.place.job_run:
            job_run.check(self)  # the job's application, environment, role and output
        claim = self.claim or ownership.check(  # before anything is made
            self.kinesis, self.store, config.stream_id, described=self.described()
        )
        outputs = binding.Outputs.of(config)
        # Read only when the outputs differ: may the output bound lack nothing if left?
        progressed = (
            claim.mark is None or outputs.recorded_in(claim.mark) or binding.progressed(self.store.list_leases())
        )
        binding.check(claim.mark, outputs, config.table, binding=config.output_binding, progressed=progressed)
        self.output.prepare(decoded(decode.declared) if decode else RAW, config.partition_by)  # checks its place first
        if claim.mark is None:  # a marked table's tables exist: the mark is written after them
            self.checkpoints.create_checkpoint_store_if_not_exists()
        first = (outputs.output, outputs.dead_letter_output) if config.output_binding != NONE else None
        claim = ownership.mark(self.store, claim, self.progress, outputs=first)
        binding.bind(
            self.store,
            outputs,
            binding=config.output_binding,
            worker_id=config.worker_id,
            seen=claim.mark,
            progressed=progressed,
            progress=self.progress,
        )
        self.claim = claim
        lineage, leases = self.survey()
        if self.place.job_run:
            job_run.cancel_left_behind(self, leases)  # before their batches are settled
        recovered = recover_pending(leases, self.manager, self.checkpoints, self.output, self.progress)
        if recovered:
            lineage, leases = self.survey()
        plan, elsewhere = leasing.take(self, lineage, leases, decode)
        self.emit("prepared")
        return recovered, plan, elsewhere

    def survey(self) -> tuple[Lineage, dict[str, Lease]]:
        return surveying.survey(self.kinesis, self.store, self.config.stream_id)

    def plan(self) -> RunPlan:
        """What a run would read now, without reading, leasing or creating anything."""
        config = self.config
        return surveying.plan_now(
            self.kinesis,
            self.store.client,
            config.stream_id,
            table=config.table,
            worker_id=config.worker_id,
            initial=config.initial_position,
            until=config.until,
            clock=self.clock,
        )

    def read(self) -> None:
        reading.read(self)

    def read_elsewhere(self, step: reading.Read) -> None:
        reading.read_elsewhere(self, step)

    def publish(self) -> bool:
        with self.timings.step("publish"):
            return publishing.publish(self)

    def commit(self) -> int:
        """Move the checkpoints to the published batch's ends; then the run's metrics and its
        OpenLineage COMPLETE (kinesis_batch.run.observe)."""
        with self.timings.step("commit"):
            record = self.output.committed(self.run_id)  # read once: the commit's and its observers'
            moved = committing.commit(self, record)
        self.observer.committed(record, self.timings.rounded(), self.fields_of, self.control_plane_waited())
        return moved

    def finish(self) -> list[str]:
        return releasing.finish(self)

    @contextmanager
    def renewing(self) -> Iterator[None]:
        """Hold this worker's leases (again, in a step's own process) and renew them until the
        block ends; a lease lost meanwhile cancels the read in progress. One process renews a
        run's leases at a time: a renewal bumps the counter the others would fence with."""
        self.manager.adopt()
        with LeaseRenewer(self.manager, on_lost=self._on_lost):
            yield

    def _on_lost(self, lost: list[str]) -> None:
        current = self.current_read
        if current is not None:
            log.warning("lost leases %s: stopping the read", ", ".join(lost))
            current.cancel()


__all__ = ["CatchUpRun"]
