"""One job run: started, watched until it ends, cancelled from any thread.

Contract:
- :meth:`JobRun.run` starts the job run and polls GetJobRun until it ends. Waiting states
  (kinesis_batch.serverless.states) are waiting, however long: the job's own timeout is the
  budget, backed here by a deadline a few minutes past it. A state change is one progress line.
- A poll that fails for a moment (throttling, an endpoint that stalls) is retried, up to
  :data:`POLL_FAILURES` in a row.
- :meth:`JobRun.cancel` (the lease renewer's thread, a stop) asks EMR Serverless to cancel at
  once; ``run`` then waits for the job run to end, so it writes nothing after, and raises.
- ``run`` returns the ended job run (GetJobRun's ``jobRun``) whatever its state: what it means,
  and what the job left, is the caller's to judge (kinesis_batch.serverless.step).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kinesis_batch.aws import aws_call
from kinesis_batch.cost import ReadCost
from kinesis_batch.errors import DependencyError, KinesisBatchError, RetryableError
from kinesis_batch.serverless import states

#: Polls that may fail in a row before the run gives up on the job run (it is then cancelled).
POLL_FAILURES = 10
#: How long past ``timeout_minutes`` the orchestrator waits for EMR Serverless to end the job.
DEADLINE_GRACE_SECONDS = 300.0
#: How long a cancelled job run may take to end before the run goes on without it.
CANCEL_WAIT_SECONDS = 120.0


@dataclass(frozen=True)
class JobRunInfo:
    """What a job run was, for the run's report: its ids, how it ended, its Spark UI and the
    resources billed (``billedResourceUtilization``; 0 until it ends); a group's job run
    (kinesis_batch.serverless.gathering) is billed to each stream by its share, ``shared_by``
    streams in all, by the ``task_seconds`` each stream's read held in it."""

    application_id: str
    job_run_id: str
    arn: str = ""
    state: str = ""
    state_details: str = ""
    dashboard: str = ""
    vcpu_hours: float = 0.0
    memory_gb_hours: float = 0.0
    storage_gb_hours: float = 0.0
    seconds: int = 0
    shared_by: int = 1
    task_seconds: float = 0.0

    @classmethod
    def of(cls, job: dict[str, Any], dashboard: str = "") -> JobRunInfo:
        billed = job.get("billedResourceUtilization") or {}
        return cls(
            application_id=str(job.get("applicationId", "")),
            job_run_id=str(job.get("jobRunId", "")),
            arn=str(job.get("arn", "")),
            state=str(job.get("state", "")),
            state_details=str(job.get("stateDetails", "")),
            dashboard=dashboard,
            vcpu_hours=float(billed.get("vCPUHour", 0.0)),
            memory_gb_hours=float(billed.get("memoryGBHour", 0.0)),
            storage_gb_hours=float(billed.get("storageGBHour", 0.0)),
            seconds=int(job.get("totalExecutionDurationSeconds", 0) or 0),
        )

    def share(self, fraction: float, *, shared_by: int, task_seconds: float) -> JobRunInfo:
        """This job run's bill times ``fraction``: one stream's share of a group's job run, whose
        read held ``task_seconds`` of it."""
        return replace(
            self,
            vcpu_hours=self.vcpu_hours * fraction,
            memory_gb_hours=self.memory_gb_hours * fraction,
            storage_gb_hours=self.storage_gb_hours * fraction,
            shared_by=shared_by,
            task_seconds=task_seconds,
        )

    def to_json(self) -> dict[str, Any]:
        shared = {"shared_by": self.shared_by, "task_seconds": round(self.task_seconds, 3)}
        shared = shared if self.shared_by > 1 else {}
        return shared | {
            "application_id": self.application_id,
            "job_run_id": self.job_run_id,
            "arn": self.arn,
            "state": self.state,
            "dashboard": self.dashboard,
            "billed": {
                "vcpu_hours": self.vcpu_hours,
                "memory_gb_hours": self.memory_gb_hours,
                "storage_gb_hours": self.storage_gb_hours,
            },
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> JobRunInfo:
        billed = body.get("billed") or {}
        return cls(
            body["application_id"],
            body["job_run_id"],
            body.get("arn", ""),
            body.get("state", ""),
            dashboard=body.get("dashboard", ""),
            vcpu_hours=float(billed.get("vcpu_hours", 0.0)),
            memory_gb_hours=float(billed.get("memory_gb_hours", 0.0)),
            storage_gb_hours=float(billed.get("storage_gb_hours", 0.0)),
            seconds=int(body.get("seconds", 0)),
            shared_by=int(body.get("shared_by", 1)),
            task_seconds=float(body.get("task_seconds", 0.0)),
        )

    @property
    def cost(self) -> ReadCost:
        """What the batch's read was billed (kinesis_batch.cost)."""
        return ReadCost(
            self.job_run_id, self.application_id, self.vcpu_hours, self.memory_gb_hours, self.storage_gb_hours
        )

    def said(self) -> str:
        """The job's bill in one phrase."""
        return self.cost.said()


class JobRun:
    """The job run ``request`` (StartJobRun's parameters) on ``client``, an EMR Serverless boto3
    client. ``poll_seconds``: between two GetJobRun calls."""

    def __init__(
        self,
        client: Any,
        request: dict[str, Any],
        *,
        poll_seconds: float,
        progress: Callable[[str], None] = lambda message: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.request = request
        self.poll_seconds = poll_seconds
        self.progress = progress
        self.clock = clock
        self.application_id: str = request["applicationId"]
        self.job_run_id: str | None = None
        self.last: dict[str, Any] = {}  # the last GetJobRun.jobRun
        self.polls: dict[str, int] = {}  # polls that saw each state
        self._cancelled = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> dict[str, Any]:
        started = aws_call("StartJobRun", self.application_id, lambda: self.client.start_job_run(**self.request))
        with self._lock:
            self.job_run_id = str(started["jobRunId"])
        self.progress(f"EMR Serverless job run {self.job_run_id} started on application {self.application_id}")
        deadline = self.clock() + self.request["executionTimeoutMinutes"] * 60 + DEADLINE_GRACE_SECONDS
        job = self._wait(deadline)
        if self._cancelled.is_set():
            raise DependencyError(f"EMR Serverless job run {self.job_run_id} was cancelled ({job.get('state')})")
        return job

    def cancel(self) -> None:
        """Cancel the job run (any thread); a job not started yet is cancelled once it is."""
        self._cancelled.set()
        with self._lock:
            started = self.job_run_id is not None
        if started and self.last.get("state") not in states.ENDED:
            try:
                self._cancel_call()
            except KinesisBatchError as exc:  # the polling thread asks again, and raises if it fails too
                self.progress(f"could not cancel job run {self.job_run_id} yet: {exc}")

    def info(self, dashboard: str = "") -> JobRunInfo:
        return JobRunInfo.of(self.last, dashboard)

    def _wait(self, deadline: float) -> dict[str, Any]:
        failures, seen, cancel_asked = 0, "", 0.0
        while True:
            if self._cancelled.is_set() and not cancel_asked:
                self._cancel_call()
                cancel_asked = self.clock()
            try:
                job = self._get()
                failures = 0
            except RetryableError as exc:
                failures += 1
                if failures >= POLL_FAILURES:
                    self.cancel()
                    raise DependencyError(
                        f"EMR Serverless job run {self.job_run_id}: {failures} polls failed in a row ({exc}); cancelled"
                    ) from exc
                self._cancelled.wait(self.poll_seconds)
                continue
            state = str(job["state"])
            self.polls[state] = self.polls.get(state, 0) + 1
            if state != seen:
                self.progress(f"job run {self.job_run_id}: {state}{_details(job)}")
                seen = state
            if state in states.ENDED:
                return job
            if cancel_asked and self.clock() - cancel_asked > CANCEL_WAIT_SECONDS:
                self.progress(f"job run {self.job_run_id} still {state} {CANCEL_WAIT_SECONDS:g} s after its cancel")
                return job
            if not cancel_asked and self.clock() > deadline:
                self.cancel()
                raise DependencyError(
                    f"EMR Serverless job run {self.job_run_id} still {state} past its timeout_minutes "
                    f"({self.request['executionTimeoutMinutes']}); cancelled"
                )
            self._cancelled.wait(self.poll_seconds)

    def _get(self) -> dict[str, Any]:
        assert self.job_run_id is not None
        self.last = get_job_run(self.client, self.application_id, self.job_run_id)
        return self.last

    def _cancel_call(self) -> None:
        assert self.job_run_id is not None
        cancel_job_run(self.client, self.application_id, self.job_run_id)


def get_job_run(client: Any, application_id: str, job_run_id: str) -> dict[str, Any]:
    """GetJobRun's ``jobRun``."""
    answer = aws_call(
        "GetJobRun",
        f"{application_id}/{job_run_id}",
        lambda: client.get_job_run(applicationId=application_id, jobRunId=job_run_id),
    )
    return dict(answer["jobRun"])


def cancel_job_run(client: Any, application_id: str, job_run_id: str) -> None:
    """CancelJobRun; refused because the job run ended meanwhile is no failure."""
    try:
        aws_call(
            "CancelJobRun",
            f"{application_id}/{job_run_id}",
            lambda: client.cancel_job_run(applicationId=application_id, jobRunId=job_run_id),
        )
    except KinesisBatchError:
        if get_job_run(client, application_id, job_run_id)["state"] not in states.ENDED:
            raise


def _details(job: dict[str, Any]) -> str:
    details = str(job.get("stateDetails") or "")
    return f" ({details})" if details else ""


__all__ = ["CANCEL_WAIT_SECONDS", "POLL_FAILURES", "JobRun", "JobRunInfo", "cancel_job_run", "get_job_run"]
