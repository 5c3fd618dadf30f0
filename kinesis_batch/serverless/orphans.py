"""Job runs a run left behind: an orchestrator killed with -9 (or a lost machine) leaves its job
run reading into a batch nobody will publish. The next run of the same lease table finds it by
name (kinesis_batch.serverless.naming), cancels it and waits for it to end before it settles
that batch or starts a job of its own, so nothing writes into a staging once it is settled.

A job run is left behind when no live lease of another worker is marked with its batch: its
run's leases lapsed (the next run took them) or were released. A batch another worker still
holds live is that worker's running job, which stays.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kinesis_batch.aws import aws_call
from kinesis_batch.errors import DependencyError
from kinesis_batch.serverless import states
from kinesis_batch.serverless.job import JobRunInfo, cancel_job_run, get_job_run
from kinesis_batch.serverless.naming import JobName

#: How long the job runs cancelled may take to end.
WAIT_SECONDS = 180.0


def active(client: Any, application_id: str, table: str) -> dict[str, JobName]:
    """The read steps of lease table ``table`` on the application that have not ended, by job
    run id."""
    found: dict[str, JobName] = {}
    asked: dict[str, Any] = {"applicationId": application_id, "states": sorted(states.ACTIVE)}
    while True:
        page = aws_call("ListJobRuns", application_id, lambda: client.list_job_runs(**asked))
        for job in page.get("jobRuns", []):
            name = JobName.parse(str(job.get("name", "")))
            if name is not None and name.table == table and job.get("state") in states.ACTIVE:
                found[str(job["id"])] = name
        token = page.get("nextToken")
        if not token:
            return found
        asked["nextToken"] = token


def cancel_left_behind(
    client: Any,
    application_id: str,
    table: str,
    *,
    left_behind: Callable[[JobName], bool],
    progress: Callable[[str], None],
    poll_seconds: float,
    clock: Callable[[], float] = time.monotonic,
) -> list[tuple[str, JobRunInfo]]:
    """Cancel the active read steps of ``table`` that ``left_behind`` says were left behind, and
    wait until they ended. Returns each one's batch and what it was, as it ended (its bill:
    billed whatever its outcome), by job run id."""
    left = {job: name for job, name in active(client, application_id, table).items() if left_behind(name)}
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
