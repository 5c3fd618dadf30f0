"""Step 4, read: one Spark job over the held shards of the plan, a group of ranges per task
(kinesis_batch.grouping), or the same step run elsewhere (a spark-submit) while this process
holds and renews the leases.

- Before a read starts anywhere (a Spark job here, a job run, a submit), the held shards are
  probed (kinesis_batch.shards.probe): when none has a record past its checkpoint, the run
  starts no read, so a quiet hour costs no JVM, no job run and no cluster time. A KMS key the
  reader cannot use is found there too, named (DescribeStreamSummary's ``KeyId``), before any
  read starts.
- A child is read once every parent reached SHARD_END, in the same task (no wave barrier).
- Rows go to the batch's data place, what each range read to its ``_results``; the files of
  failed task attempts are deleted. Nothing is kept when the leases were lost meanwhile (a run
  frozen, then thawed after another worker settled its batch): that ends as LeaseLostError,
  with the line naming who has the shards now.
- A lease lost while reading (the renewer cancels the job) raises LeaseLostError; a stop asked
  for (kinesis_batch.stopping) cancels it too, and raises ShutdownError; an error inside a task
  is raised as the library's own error, not as Spark's wrapper, its line ending "nothing was
  published" (errors.before_publishing), as every error of this step does.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime
from typing import Any, NoReturn, Protocol

from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.errors import InvalidStateError, KeyUnusableError, KinesisBatchError, before_publishing, key_unusable
from kinesis_batch.events import task_observers
from kinesis_batch.grouping import group_ranges
from kinesis_batch.planning import RunPlan, ShardRange, parents_ended, readable, shard_commit
from kinesis_batch.run import job_run, route
from kinesis_batch.run.context import Cancellable, RunContext
from kinesis_batch.run.retention import check_gaps, warn_if_at_risk
from kinesis_batch.shards.positions import EndBound
from kinesis_batch.shards.probe import has_news
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.staged import RangeResult, staged

#: Shards probed at once before a read (one GetShardIterator and one GetRecords each).
PROBES_AT_ONCE = 8


class Read(Cancellable, Protocol):
    """A read step run elsewhere (a spark-submit): ``run`` reads, ``cancel`` stops it."""

    def run(self) -> None: ...


def read(context: RunContext) -> None:
    """Read the plan's held ranges in one Spark job: here, or as an EMR Serverless job run when
    the stream's settings say so (kinesis_batch.run.job_run). Its errors' lines end saying that
    nothing was published."""
    with before_publishing():
        _read(context)


def _read(context: RunContext) -> None:
    from kinesis_batch.spark.job import ReadJob, ship_module, warm_up
    from kinesis_batch.spark.spec import GroupSpec

    found = _to_read(context)
    if found is None:  # no Spark, no job run
        return
    plan, ranges = found
    if context.place.job_run:
        _read_as_job_run(context, ranges)
        return
    output, batch_id = context.output, context.run_id
    output.clear_staged_rows(batch_id)  # an earlier attempt of this step
    data = output.data(batch_id)
    data.make_dirs()
    decode, dead_data = _decoding(context)
    try:
        with context.timings.step("spark_start"):  # once, outside the read's timing
            spark = context.spark()
            slots = warm_up(spark)  # its tasks need what the read's do: their failure is the read's
        slots = max(1, slots // context.config.slot_share)  # the runs reading beside it have theirs
    except Exception as exc:
        _raise_failure(context, exc)
    if decode is not None and decode.settings.transform:
        ship_module(spark, decode.settings.transform)
    target, dead = context.config.target_bytes, output.dead_letters()
    dead_files = dead.file_layout(target) if dead else None
    targets, decode = route.targets(context, output, decode)
    groups = group_ranges(ranges, slots=slots, shards_per_task=context.config.shards_per_task)
    specs = [
        GroupSpec.of(
            context.config,
            context.kinesis,
            group,
            plan.until,
            targets,
            batch_id,
            batch_column=output.writes_batch_column(),
            dead_data=dead_data,
            decode=decode,
            dead_files=dead_files,
            sts_endpoint_url=context.sts_endpoint,
        )
        for group in groups
    ]
    job = ReadJob(spark, batch_id, observers=task_observers())
    context.current_read = job  # for the lease renewer to cancel
    started = time.monotonic()
    try:
        context.stop.check("before reading")
        with context.timings.step("read"), context.stop.on_request(job.cancel):
            done = job.run(specs)
    except Exception as exc:
        _raise_failure(context, exc)
    except BaseException:  # interrupted (KeyboardInterrupt, an orchestrator's own): no task reads on
        job.cancel()
        raise
    finally:
        context.tasks, context.failed_task_attempts = job.tasks, job.failed_attempts
        context.task_seconds = job.tasks * (time.monotonic() - started)  # a read stopped or failed held them too
        context.current_read = None
    seconds = time.monotonic() - started
    context.still_ours("while reading")  # before writing anything more into the batch's staging
    job.keep(done, specs, output.results(batch_id))
    if decode is not None and dead_files is not None:
        route.decide(context, output, decode, dead_files)
    _report(context, ranges, staged(output.results(batch_id)), seconds, len(specs))
    context.emit("read")


def _to_read(context: RunContext) -> tuple[RunPlan, tuple[ShardRange, ...]] | None:
    """The plan and the ranges of it this worker holds, or None (the step then done) when it
    holds none or none of them has anything new: no read is started anywhere."""
    context.manager.adopt()
    plan = context.manifest("while reading")
    ranges = readable(plan.ranges, set(context.manager.held()))
    if not ranges or not anything_new(context, plan.until, ranges):
        context.emit("read")
        return None
    return plan, ranges


def anything_new(context: RunContext, until: datetime | None, ranges: tuple[ShardRange, ...]) -> bool:
    """Whether any of ``ranges`` has a record to read or an end to record
    (kinesis_batch.shards.probe), asked of the shards side by side and answered at the first
    yes; said in one line when none has, the run then starting no read anywhere."""
    config, end = context.config, EndBound(until=until)

    def probe(shard_range: ShardRange) -> bool:
        start = shard_range.start.start_position()
        return start is not None and has_news(
            context.kinesis,
            config.stream_id,
            shard_range.shard_id,
            start,
            closed=shard_range.closed,
            end=end,
            limits=config.read_limits,
        )

    with ThreadPoolExecutor(max_workers=min(PROBES_AT_ONCE, len(ranges))) as pool:
        for news in as_completed([pool.submit(probe, r) for r in ranges]):
            try:
                found = news.result()
            except KeyUnusableError as exc:  # the first GetRecords: the key is said before any read
                described = context.described()
                raise key_unusable(described.key_id or "(none named)", described.name, exc.said) from exc
            if found:
                pool.shutdown(cancel_futures=True)
                return True
    context.progress(f"read: nothing new on {len(ranges)} shards since their checkpoints; no read started")
    return False


def _read_as_job_run(context: RunContext, ranges: tuple[ShardRange, ...]) -> None:
    """The read as an EMR Serverless job run; what it read, said from its results."""
    step = job_run.job_run_read(context)
    started = time.monotonic()
    try:
        _read_elsewhere(context, step)
    finally:
        context.job_run = step.info
        if step.result is not None:
            context.tasks, context.failed_task_attempts = step.result.tasks, step.result.failed_task_attempts
        for batch_id, info in step.cancelled:  # earlier attempts of this read
            job_run.bill(context, info, batch_id)
        if step.info is not None:  # billed whatever its outcome
            job_run.bill(context, step.info)
            context.progress(f"job run {step.info.job_run_id}: {step.info.said()}")
    if step.info is not None:  # read: its bill goes with the batch
        job_run.record(context, step.info)
    _report(context, ranges, staged(context.output.results(context.run_id)), time.monotonic() - started, context.tasks)


def _decoding(context: RunContext) -> tuple[DecodeSpec | None, Place | None]:
    """The run's decoding with the table's fields as they are now, and the dead letters' data
    place (made here: a task never makes a staging folder)."""
    decode = context.decoding()
    dead = context.output.dead_letters()
    if decode is None or dead is None:
        return None, None
    decode = decode.with_table(context.output.fields(), widen=context.output.widens)
    dead_data = dead.data(context.run_id)
    dead_data.make_dirs()
    return decode, dead_data


def read_elsewhere(context: RunContext, step: Read) -> None:
    """The read step in another process (a spark-submit of ``--step read``), while this one
    holds and renews the leases: a lease lost meanwhile stops it and raises LeaseLostError. Its
    errors' lines end saying that nothing was published."""
    with before_publishing():
        _read_elsewhere(context, step)


def _read_elsewhere(context: RunContext, step: Read) -> None:
    if _to_read(context) is None:  # nothing submitted
        return
    context.current_read = step
    try:
        context.stop.check("before reading")
        with context.timings.step("read"), context.stop.on_request(step.cancel):
            step.run()
    except Exception as exc:
        _raise_failure(context, exc)
    except BaseException:
        step.cancel()
        raise
    finally:
        context.current_read = None
    context.emit("read")


def _raise_failure(context: RunContext, exc: Exception) -> NoReturn:
    """A failed or cancelled read: a stop asked for cancelled it, else a lost lease explains it,
    then a task's own error. Read-only: the process that renews the leases may be another one."""
    from kinesis_batch.spark.spec import raised_in_task

    if context.stop.requested:
        raise context.stop.error("stopped while reading") from exc

    lost = context.manager.lost_leases()
    if not lost:
        with contextlib.suppress(KinesisBatchError):  # cannot tell now: the task's error stands
            lost = context.manager.taken_over()
    if lost:
        raise context.lost(lost, "while reading") from exc
    error = raised_in_task(exc)
    if error is None:
        raise exc
    raise error from exc


def _report(
    context: RunContext, ranges: tuple[ShardRange, ...], staged: dict[str, RangeResult], seconds: float, tasks: int
) -> None:
    """Check the results (every range a task had to read was read; gaps), and say them."""
    results = {shard: result.read for shard, result in staged.items()}
    missing = [r.shard_id for r in ranges if r.shard_id not in results and parents_ended(r, results)]
    if missing:
        raise InvalidStateError(f"the Spark job reported nothing for shards {', '.join(missing)}")
    config, progress = context.config, context.progress
    check_gaps(
        {shard: r.trimmed_after for shard, r in results.items()}, allow_gaps=config.allow_gaps, progress=progress
    )
    hours = context.described().retention_hours
    for shard_range in ranges:
        result = results.get(shard_range.shard_id)
        if result is None:
            progress(f"  {shard_range.shard_id}: not read, a parent stopped at the bound")
            continue
        moved = shard_commit(shard_range, result)
        warn_if_at_risk(shard_range.shard_id, result.first_millis_behind_latest, hours, progress)
        landed = _landed(staged[shard_range.shard_id].counts)
        progress(
            f"  {shard_range.shard_id}: {result.records} records{landed}, "
            f"now at {moved.end if moved else shard_range.start}"
        )
    records = sum(result.records for result in results.values())
    retried = f"; {context.failed_task_attempts} failed task attempts retried" if context.failed_task_attempts else ""
    progress(
        f"read: {len(results)} shards in {tasks} tasks, {records} records in {seconds:.1f} s "
        f"({records / max(seconds, 1e-9):,.0f} rec/s){retried}"
    )


def _landed(counts: dict[str, Any]) -> str:
    """What decoded records became, as the progress line says it ("" for raw rows)."""
    if not counts:
        return ""
    said = f" ({counts.get('rows', 0)} rows, {counts.get('dead_letters', 0)} dead letters"
    return said + (f", {counts['filtered']} filtered out)" if counts.get("filtered") else ")")


__all__ = ["Read", "read", "read_elsewhere"]
