"""Job runs a crashed run left behind: found by name on the application, only the lease table's
and only those the caller says were left behind, cancelled and waited for; a group's job run by
the manifest beside its specs, by the next run of any of its members."""

from __future__ import annotations

from kinesis_batch.aws import emr_serverless_client, s3_settings
from kinesis_batch.serverless.attempt import Attempt
from kinesis_batch.serverless.naming import GroupJobName, JobName
from kinesis_batch.serverless.orphans import active, cancel_left_behind
from kinesis_batch.storage.place import Place
from tests.output.support import make_bucket
from tests.serverless.standin import ROLE, StandIn


def start(client: object, application: str, name: str, specs: list[str] | None = None) -> str:
    driver = {"sparkSubmit": {"entryPoint": "s3://nowhere/e.py", "entryPointArguments": specs or []}}
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
    assert set(active(client, application, "kinesis-batch-a", s3_settings())) == {left, live}
    said: list[str] = []

    cancelled = cancel_left_behind(
        client, application, "kinesis-batch-a", s3=s3_settings(), left_behind=lambda job: job.batch_id != "run-2",
        progress=said.append, poll_seconds=0.2,
    )  # fmt: skip

    assert [(batch, info.job_run_id, info.state) for batch, info in cancelled] == [("run-1", left, "CANCELLED")]
    assert said == [f"cancelling job run {left} of batch run-1: a run left it behind"]
    states = {job["jobRunId"]: job["state"] for job in emr_serverless.job_runs(application)}
    assert states == {left: "CANCELLED", live: "QUEUED", other_table: "QUEUED", not_ours: "QUEUED"}
    for job in (live, other_table, not_ours):
        client.cancel_job_run(applicationId=application, jobRunId=job)


def test_a_groups_job_run_is_found_by_the_next_run_of_any_member_through_its_manifest(emr_serverless: StandIn) -> None:
    client = emr_serverless_client()
    application = emr_serverless.application()
    emr_serverless.behave(application, queued_seconds=300)
    bucket = make_bucket()
    members = {table: JobName(table, f"run-{table[-1]}", "0a") for table in ("kinesis-batch-a", "kinesis-batch-b")}
    attempts = [Attempt("0a", Place(f"s3://{bucket}/{table}/_emr_serverless/0a", s3_settings())) for table in members]
    for attempt in attempts:
        attempt.write_members(list(members.values()))
    attempts[0].place.delete("members.json")  # the first member's staging was settled since: the others still say
    group = start(client, application, str(GroupJobName.new("hourly jobs")), [a.spec for a in attempts])
    gone = start(client, application, str(GroupJobName.new("gone")), [f"s3://{bucket}/nowhere/spec.json"])
    s3 = s3_settings()
    assert active(client, application, "kinesis-batch-b", s3) == {group: members["kinesis-batch-b"]}
    assert active(client, application, "kinesis-batch-a", s3) == {group: members["kinesis-batch-a"]}
    assert active(client, application, "kinesis-batch-c", s3) == {}

    cancelled = cancel_left_behind(
        client, application, "kinesis-batch-b", s3=s3, left_behind=lambda job: job.batch_id == "run-b",
        progress=lambda _: None, poll_seconds=0.2,
    )  # fmt: skip

    assert [(batch, info.job_run_id, info.state) for batch, info in cancelled] == [("run-b", group, "CANCELLED")]
    client.cancel_job_run(applicationId=application, jobRunId=gone)
