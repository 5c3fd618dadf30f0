"""Job runs a crashed run left behind: found by name on the application, only the lease table's
and only those the caller says were left behind, cancelled and waited for."""

from __future__ import annotations

from kinesis_batch.aws import emr_serverless_client
from kinesis_batch.serverless.orphans import active, cancel_left_behind
from tests.serverless.standin import ROLE, StandIn


def start(client: object, application: str, name: str) -> str:
    driver = {"sparkSubmit": {"entryPoint": "s3://nowhere/e.py"}}
    started = client.start_job_run(  # type: ignore[attr-defined]
        applicationId=application, executionRoleArn=ROLE, name=name, jobDriver=driver, clientToken=name[-64:]
    )
    return str(started["jobRunId"])


def test_only_the_tables_job_runs_left_behind_are_cancelled_and_ended(emr_serverless: StandIn) -> None:
    client = emr_serverless_client()
    application = emr_serverless.application()
    emr_serverless.behave(application, queued_seconds=300)  # they wait, active, until cancelled
    left = start(client, application, "kinesis-batch/kinesis-batch-a/run-1/0a")
    live = start(client, application, "kinesis-batch/kinesis-batch-a/run-2/0b")
    other_table = start(client, application, "kinesis-batch/kinesis-batch-b/run-1/0c")
    not_ours = start(client, application, "nightly-etl")
    assert set(active(client, application, "kinesis-batch-a")) == {left, live}
    said: list[str] = []

    cancelled = cancel_left_behind(
        client, application, "kinesis-batch-a", left_behind=lambda job: job.batch_id != "run-2",
        progress=said.append, poll_seconds=0.2,
    )  # fmt: skip

    assert [(batch, info.job_run_id, info.state) for batch, info in cancelled] == [("run-1", left, "CANCELLED")]
    assert said == [f"cancelling job run {left} of batch run-1: a run left it behind"]
    states = {job["jobRunId"]: job["state"] for job in emr_serverless.job_runs(application)}
    assert states == {left: "CANCELLED", live: "QUEUED", other_table: "QUEUED", not_ours: "QUEUED"}
    for job in (live, other_table, not_ours):
        client.cancel_job_run(applicationId=application, jobRunId=job)
