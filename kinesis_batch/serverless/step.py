"""A run's read step as one EMR Serverless job run, for the orchestrator that holds the leases
(kinesis_batch.run.job_run): checked, any earlier attempt of the batch's read cancelled, the
attempt's files written, the job run started and watched, and its outcome judged from what the
job left for *this* attempt, never from its state alone.

- SUCCESS with this attempt's result of exit 0: the read is done; its staging holds the batch.
- SUCCESS without this attempt's result (a job that ran nothing, a result of an earlier
  attempt): DependencyError, one line; nothing was published.
- FAILED (or CANCELLED by someone else): one line with the state and ``stateDetails``, and the
  job's own line when it left one, as the error its exit code means (2 bad input or state,
  3 a lost lease).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kinesis_batch import defaults
from kinesis_batch.aws import S3Settings, aws_call
from kinesis_batch.errors import (
    NOTHING_PUBLISHED,
    DependencyError,
    IllegalArgumentError,
    KinesisBatchError,
    from_exit_code,
)
from kinesis_batch.serverless import checks, orphans, states
from kinesis_batch.serverless.attempt import Attempt, JobResult
from kinesis_batch.serverless.job import JobRun, JobRunInfo
from kinesis_batch.serverless.naming import JobName, tags
from kinesis_batch.serverless.request import spark_settings, start_job_run
from kinesis_batch.serverless.settings import ServerlessSettings
from kinesis_batch.storage.place import Place

#: Seconds between two polls of a job run's state: KINESIS_BATCH_EMR_SERVERLESS_POLL_SECONDS,
#: else defaults.EMR_SERVERLESS_POLL_SECONDS.
POLL_SECONDS = "KINESIS_BATCH_EMR_SERVERLESS_POLL_SECONDS"


def poll_seconds() -> float:
    text = os.environ.get(POLL_SECONDS, "")
    try:
        seconds = float(text) if text else defaults.EMR_SERVERLESS_POLL_SECONDS
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 600:
        raise IllegalArgumentError(f"{POLL_SECONDS}={text!r}: a number of seconds in (0, 600] is needed")
    return seconds


@dataclass(frozen=True)
class ReadInputs:
    """What the read step of batch ``batch_id`` of lease table ``table`` as a job run is made of:
    ``config`` is the RunConfig JSON the job's read step runs with (without ``emr_serverless``),
    ``staging`` the batch's staging."""

    client: Any
    settings: ServerlessSettings
    config: dict[str, Any]
    batch_id: str
    table: str
    stream: str
    worker_id: str
    staging: Place
    s3: S3Settings
    progress: Callable[[str], None]

    def prepare(self) -> tuple[Attempt, checks.Target, list[tuple[str, JobRunInfo]]]:
        """A new attempt of the read: checked, the earlier attempts of this batch's read
        cancelled (each as it ended), its entry point and spec written."""
        attempt = Attempt.new(self.staging)
        name = str(self.name(attempt))
        target = checks.check(self.client, self.settings, s3=self.s3, staging=self.staging.uri, name=name)
        cancelled = orphans.cancel_left_behind(
            self.client,
            self.settings.application_id,
            self.table,
            s3=self.s3,
            left_behind=lambda job: job.batch_id == self.batch_id,  # an earlier attempt of this read
            progress=self.progress,
            poll_seconds=poll_seconds(),
        )
        attempt.write_inputs(self.config, self.batch_id)
        return attempt, target, cancelled

    def name(self, attempt: Attempt) -> JobName:
        """The job run's name for ``attempt`` (found again by it: kinesis_batch.serverless.naming)."""
        return JobName(self.table, self.batch_id, attempt.id)


class JobRunRead:
    """The read step of ``inputs``' batch as a job run of its own: ``run`` reads (raises as
    above), ``cancel`` stops it from any thread; afterwards ``info`` and ``result`` say what the
    job run was and did, and ``cancelled`` which earlier attempts it cancelled."""

    def __init__(self, inputs: ReadInputs) -> None:
        self.inputs = inputs
        self.poll_seconds = poll_seconds()
        self.job: JobRun | None = None
        self.info: JobRunInfo | None = None
        self.result: JobResult | None = None
        #: Earlier attempts of this read it cancelled, as they ended: (batch id, job run).
        self.cancelled: list[tuple[str, JobRunInfo]] = []
        self._cancelled = False

    def run(self) -> None:
        read = self.inputs
        attempt, target, self.cancelled = read.prepare()
        name = read.name(attempt)
        request = start_job_run(
            read.settings,
            name,
            entry_point=attempt.entry_point,
            spec=attempt.spec,
            conf=spark_settings(read.settings, target.python, target.interpreter, target.arch),
            tags=tags(name, stream=read.stream, worker_id=read.worker_id),
        )
        self.job = JobRun(read.client, request, poll_seconds=self.poll_seconds, progress=read.progress)
        if self._cancelled:
            self.job.cancel()
        try:
            ended = self.job.run()
        finally:
            if self.job.job_run_id is not None:  # started: what it was, and its bill so far
                link = dashboard(read.client, read.settings.application_id, self.job.job_run_id, read.progress)
                self.info = self.job.info(link)
        assert self.info is not None
        result = attempt.result()
        self.result = mine = result if result is not None and result.attempt == attempt.id else None
        if ended["state"] != states.SUCCESS:
            raise failed(self.info, mine)
        if mine is None:
            raise no_result(self.info, attempt)
        if mine.exit_code != 0:
            raise failed(self.info, mine)

    def cancel(self) -> None:
        self._cancelled = True
        if self.job is not None:
            self.job.cancel()


def dashboard(client: Any, application_id: str, job_run_id: str, progress: Callable[[str], None]) -> str:
    """The job run's Spark UI (GetDashboardForJobRun: a link valid for an hour); "" where the
    endpoint does not serve it."""
    try:
        answer = aws_call(
            "GetDashboardForJobRun",
            job_run_id,
            lambda: client.get_dashboard_for_job_run(applicationId=application_id, jobRunId=job_run_id),
        )
    except KinesisBatchError as exc:  # a link is no reason to fail a read: said, and left out
        progress(f"no Spark UI link for job run {job_run_id}: {exc}")
        return ""
    return str(answer.get("url", ""))


def no_result(info: JobRunInfo, attempt: Attempt) -> DependencyError:
    """A job run that says SUCCESS without this attempt's result: it never read (or an earlier
    attempt's result is all there is)."""
    return DependencyError(
        f"EMR Serverless job run {info.job_run_id} says SUCCESS but left no result for this attempt "
        f"({attempt.id}) in {attempt.place.uri}: {NOTHING_PUBLISHED}"
    )


def failed(info: JobRunInfo, result: JobResult | None) -> KinesisBatchError:
    """A job run that did not read, as the error its read step raised (else the one its exit code
    means), with where to look: its Spark UI (a link valid for an hour), else the application's
    logs."""
    said = f"EMR Serverless job run {info.job_run_id} ended {info.state}"
    details = f": {info.state_details}" if info.state_details else ""
    look = (
        f" (Spark UI: {info.dashboard})"
        if info.dashboard
        else f" (its logs: aws emr-serverless get-dashboard-for-job-run --application-id {info.application_id} "
        f"--job-run-id {info.job_run_id})"
    )
    if result is None or result.exit_code == 0:
        return DependencyError(f"{said}{details}; {NOTHING_PUBLISHED}{look}")
    unpublished = "" if NOTHING_PUBLISHED in result.error else f"; {NOTHING_PUBLISHED}"
    # The read step's own line first, as its error: that is what the user acts on.
    return from_exit_code(result.exit_code, f"{result.error}; {said}{unpublished}{look}", result.kind)


__all__ = ["POLL_SECONDS", "JobRunRead", "ReadInputs", "dashboard", "failed", "no_result", "poll_seconds"]
