"""Job runs a run left behind: an orchestrator killed with -9 (or a lost machine) leaves its job
run reading into a batch nobody will publish. The next run of the same lease table finds it by
name (kinesis_batch.serverless.naming), cancels it and waits for it to end before it settles
that batch or starts a job of its own, so nothing writes into a staging once it is settled.

A job run is left behind when no live lease of another worker is marked with its batch: its
run's leases lapsed (the next run took them) or were released. A batch another worker still
holds live is that worker's running job, which stays.

A group's job run (kinesis_batch.serverless.gathering) is found by the next run of any of its
streams: its name says it is a group's, and the manifest beside its specs names each member's
table and batch (kinesis_batch.serverless.attempt.members_beside). Cancelling it ends every
member's read; the others' next runs settle their batches as after any crash.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kinesis_batch.aws import S3Settings, aws_call
from kinesis_batch.errors import DependencyError
from kinesis_batch.serverless import states
from kinesis_batch.serverless.attempt import members_beside
from kinesis_batch.serverless.job import JobRunInfo, cancel_job_run, get_job_run
from kinesis_batch.serverless.naming import GroupJobName, JobName

#: How long the job runs cancelled may take to end.
WAIT_SECONDS = 180.0


def active(client: Any, application_id: str, table: str, s3: S3Settings) -> dict[str, JobName]:
    """The read steps of lease table ``table`` on the application that have not ended, by job
    run id: job runs of its own, and groups' job runs holding a read of it (its member's name)."""
    found: dict[str, JobName] = {}
    asked: dict[str, Any] = {"applicationId": application_id, "states": sorted(states.ACTIVE)}
    while True:
        page = aws_call("ListJobRuns", application_id, lambda: client.list_job_runs(**asked))
        for job in page.get("jobRuns", []):
            if job.get("state") not in states.ACTIVE:
                continue
            text, job_run_id = str(job.get("name", "")), str(job["id"])
            name = JobName.parse(text)
            if name is None and GroupJobName.parse(text) is not None:
                name = _member(client, application_id, job_run_id, table, s3)
            if name is not None and name.table == table:
                found[job_run_id] = name
        token = page.get("nextToken")
        if not token:
            return found
        asked["nextToken"] = token


def _member(client: Any, application_id: str, job_run_id: str, table: str, s3: S3Settings) -> JobName | None:
    """The read of lease table ``table`` that group job run ``job_run_id`` holds, if any."""
    job = get_job_run(client, application_id, job_run_id)
    specs = job.get("jobDriver", {}).get("sparkSubmit", {}).get("entryPointArguments", [])
    return next((member for member in members_beside(specs, s3) if member.table == table), None)


def cancel_left_behind(
    client: Any,
    application_id: str,
    table: str,
    *,
    s3: S3Settings,
    left_behind: Callable[[JobName], bool],
    progress: Callable[[str], None],
    poll_seconds: float,
    clock: Callable[[], float] = time.monotonic,
) -> list[tuple[str, JobRunInfo]]:
    """Cancel the active read steps of ``table`` that ``left_behind`` says were left behind, and
    wait until they ended. Returns each one's batch and what it was, as it ended (its bill:
    billed whatever its outcome), by job run id."""
    left = {job: name for job, name in active(client, application_id, table, s3).items() if left_behind(name)}
    for job, name in sorted(left.items()):
        progress(f"cancelling job run {job} of batch {name.batch_id}: a run left it behind")
        cancel_job_run(client, application_id, job)
    deadline = clock() + WAIT_SECONDS
    waiting = set(left)
    ended: dict[str, JobRunInfo] = {}
    while waiting:
        for job in sorted(waiting):
            answer = get_job_run(client, application_id, job)
            if answer["state"] in states.ENDED:
                ended[job] = JobRunInfo.of(answer)
                waiting.discard(job)
        if waiting and clock() > deadline:
            raise DependencyError(
                f"job runs {', '.join(sorted(waiting))} left behind were cancelled but did not end within "
                f"{WAIT_SECONDS:g} s; the next run tries again"
            )
        if waiting:
            time.sleep(poll_seconds)
    return [(left[job].batch_id, ended[job]) for job in sorted(left)]


__all__ = ["WAIT_SECONDS", "active", "cancel_left_behind"]
