"""The read step as an EMR Serverless job run (``emr_serverless`` set; kinesis_batch.serverless),
in the steps of the run that holds the leases:

- the start checks the application, environment, role and output before anything is made
  (:func:`check`), and cancels the job runs crashed runs left behind before it settles their
  batches (:func:`cancel_left_behind`);
- the read step starts one job run and waits for it with the leases renewed meanwhile; a lost
  lease or a stop cancels it (:func:`job_run_read`, through read.read_elsewhere); the job run
  that read is kept in the batch's staging (:func:`record`) for the publish step, whose commit
  record carries its bill into the history (:func:`cost`);
- every job run that ended, whatever its outcome (read, failed, cancelled by a stop, a lost
  lease or the next run, or read nothing new), has its bill kept in the history as it ends
  (:func:`bill`), so ``history --runs`` shows what each run cost, also one that committed nothing.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kinesis_batch.aws import s3_settings
from kinesis_batch.checkpoints.bills import Bill, record_bill
from kinesis_batch.cost import ReadCost
from kinesis_batch.leases.model import Lease
from kinesis_batch.serverless import checks, orphans
from kinesis_batch.serverless.attempt import record_job_run, recorded_job_run
from kinesis_batch.serverless.gathering import GatheredRead
from kinesis_batch.serverless.job import JobRunInfo
from kinesis_batch.serverless.naming import JobName
from kinesis_batch.serverless.settings import ServerlessSettings
from kinesis_batch.serverless.step import JobRunRead, ReadInputs, poll_seconds

if TYPE_CHECKING:
    from kinesis_batch.run.context import RunContext


def settings_of(context: RunContext) -> ServerlessSettings:
    settings = context.config.settings.emr_serverless
    assert settings is not None, "only a run with emr_serverless reads as a job run"
    return settings


def check(context: RunContext) -> None:
    """Bad input, one line each, before a lease is taken (kinesis_batch.serverless.checks)."""
    name = JobName(context.config.table, context.run_id, "0")
    checks.check(
        context.emr_serverless(),
        settings_of(context),
        s3=s3_settings(),
        staging=context.output.staging(context.run_id).uri,
        name=str(name),
    )


def cancel_left_behind(context: RunContext, leases: dict[str, Lease]) -> list[str]:
    """Cancel the table's job runs whose batch no other worker holds live, and wait for them to
    end, before their batches are settled; their bills go into the history. Returns their job
    run ids."""
    now = context.manager.now_ms()
    live = {
        lease.pending_batch_id
        for lease in leases.values()
        if lease.pending_batch_id and lease.lease_owner != context.config.worker_id and lease.is_live(now)
    }
    cancelled = orphans.cancel_left_behind(
        context.emr_serverless(),
        settings_of(context).application_id,
        context.config.table,
        s3=s3_settings(),
        left_behind=lambda job: job.batch_id not in live,
        progress=context.progress,
        poll_seconds=poll_seconds(),
    )
    for batch_id, info in cancelled:
        bill(context, info, batch_id)
    return [info.job_run_id for _, info in cancelled]


def job_run_read(context: RunContext) -> JobRunRead | GatheredRead:
    """The read step of the run's batch as a job run, with the run's own configuration but for
    ``emr_serverless`` (inside the job, the read step reads on the job's Spark): a job run of its
    own, or a group's run's one job run beside its other streams' (its ``gathering``, when that
    gathering counts this stream among those it waits for)."""
    config = context.config
    inside = replace(config, settings=replace(config.settings, emr_serverless=None))
    inputs = ReadInputs(
        context.emr_serverless(),
        settings_of(context),
        inside.to_json(),
        batch_id=context.run_id,
        table=config.table,
        stream=config.stream,
        worker_id=config.worker_id,
        staging=context.output.staging(context.run_id),
        s3=s3_settings(),
        progress=context.progress,
    )
    if context.gathering is not None and context.gathering.takes(config.stream):
        return GatheredRead(context.gathering, inputs)
    return JobRunRead(inputs)


def record(context: RunContext, info: JobRunInfo) -> None:
    """The job run that read the batch, kept in its staging for the publish step's record."""
    context.job_run = info
    record_job_run(context.output.staging(context.run_id), info)


def bill(context: RunContext, info: JobRunInfo, batch_id: str | None = None) -> None:
    """Keep what job run ``info`` of batch ``batch_id`` (default: this run's) was billed, whatever
    its outcome, in the checkpoint history (kinesis_batch.checkpoints.bills)."""
    ended = Bill(batch_id or context.run_id, info.state, datetime.now(UTC), info.cost)
    record_bill(context.checkpoints.history, ended)


def cost(context: RunContext) -> ReadCost | None:
    """What the batch's read was billed (None: read here, or on a cluster that bills nothing per read)."""
    if not context.place.job_run:
        return None
    info = context.job_run or recorded_job_run(context.output.staging(context.run_id))
    return info.cost if info else None


__all__ = ["bill", "cancel_left_behind", "check", "cost", "job_run_read", "record", "settings_of"]
