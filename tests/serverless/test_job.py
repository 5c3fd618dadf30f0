"""One job run, against the stand-in: waited for through QUEUED, cancelled from another thread,
given up on past its timeout; its bill read from the ended job run."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest

from kinesis_batch.aws import emr_serverless_client
from kinesis_batch.errors import DependencyError
from kinesis_batch.serverless.job import JobRun
from tests.serverless.standin import ROLE, StandIn


def request(application: str, name: str, timeout_minutes: int = 5) -> dict[str, Any]:
    return {
        "applicationId": application,
        "clientToken": name,
        "executionRoleArn": ROLE,
        "name": name,
        "jobDriver": {"sparkSubmit": {"entryPoint": "s3://nowhere/e.py"}},
        "executionTimeoutMinutes": timeout_minutes,
    }


def test_a_job_run_is_waited_for_through_its_states_and_its_bill_read_once_it_ended(emr_serverless: StandIn) -> None:
    application = emr_serverless.application()
    emr_serverless.behave(application, lie=True, queued_polls=5)  # queued, then SUCCESS without running
    said: list[str] = []
    job = JobRun(emr_serverless_client(), request(application, "j1"), poll_seconds=0.1, progress=said.append)

    ended = job.run()

    assert ended["state"] == "SUCCESS"
    assert said[0] == f"EMR Serverless job run {job.job_run_id} started on application {application}"
    seen = [line.split(": ")[1] for line in said[1:]]
    assert len(seen) == len(set(seen)) and "QUEUED" in seen and seen[-1] == "SUCCESS", seen  # each change once
    assert job.polls["QUEUED"] == 5 == emr_serverless.polls(job.job_run_id)["QUEUED"]
    assert job.info().vcpu_hours == pytest.approx(4 / 60, abs=1e-5)  # a worker's minimum minute


def test_a_cancel_from_another_thread_ends_the_job_run_and_the_wait_raises(emr_serverless: StandIn) -> None:
    application = emr_serverless.application()
    emr_serverless.behave(application, queued_seconds=120)
    job = JobRun(emr_serverless_client(), request(application, "j2"), poll_seconds=0.1)
    threading.Timer(1.0, job.cancel).start()  # as the lease renewer's thread does
    started = time.monotonic()

    with pytest.raises(DependencyError, match=r"was cancelled \(CANCELLED\)"):
        job.run()

    assert time.monotonic() - started < 30
    (run,) = emr_serverless.job_runs(application)
    assert run["state"] == "CANCELLED"


def test_a_job_run_still_waiting_past_its_timeout_is_cancelled_and_the_run_fails(emr_serverless: StandIn) -> None:
    application = emr_serverless.application()
    emr_serverless.behave(application, queued_seconds=120)
    minutes = itertools.count(0, 60.0)  # each look at the clock a minute later: 2 + 5 minutes soon pass
    job = JobRun(
        emr_serverless_client(), request(application, "j3", timeout_minutes=2), poll_seconds=0.05,
        clock=lambda: next(minutes),
    )  # fmt: skip

    with pytest.raises(DependencyError, match=r"still QUEUED past its timeout_minutes \(2\); cancelled"):
        job.run()

    (run,) = emr_serverless.job_runs(application)
    assert run["state"] in ("CANCELLING", "CANCELLED")
