"""A job run is judged by what it left for this attempt, never by its state alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kinesis_batch.aws import emr_serverless_client, s3_settings
from kinesis_batch.errors import AccessDeniedError, DependencyError, InvalidStateError, LeaseLostError
from kinesis_batch.serverless.attempt import Attempt, JobResult
from kinesis_batch.serverless.job import JobRunInfo
from kinesis_batch.serverless.settings import ServerlessSettings
from kinesis_batch.serverless.step import JobRunRead, ReadInputs, failed
from kinesis_batch.storage.place import Place
from tests.output.support import make_bucket
from tests.serverless.standin import ROLE, StandIn


def test_success_with_only_an_earlier_attempts_result_in_the_staging_is_a_failure(emr_serverless: StandIn) -> None:
    application = emr_serverless.application()
    emr_serverless.behave(application, lie=True)  # SUCCESS, having run nothing
    staging = Place(f"s3://{make_bucket()}/t/_kinesis_batch/run-1", s3_settings())
    earlier = Attempt.new(staging)
    earlier.write_inputs({}, "run-1")
    JobResult(earlier.id, 0, tasks=3).write(earlier.place.child("result.json"))  # a read that did finish once
    environment = emr_serverless.environment(runs=False)
    given = {"application_id": application, "execution_role_arn": ROLE, "environment": environment}
    settings = ServerlessSettings.of(given)
    assert settings is not None
    read = JobRunRead(ReadInputs(
        emr_serverless_client(), settings, {}, batch_id="run-1", table="kinesis-batch-s", stream="s",
        worker_id="w", staging=staging, s3=s3_settings(), progress=lambda line: None,
    ))  # fmt: skip

    with pytest.raises(DependencyError, match="says SUCCESS but left no result for this attempt"):
        read.run()

    assert read.info is not None and read.info.state == "SUCCESS"


UI = "https://p-abc.emrappui-prod.eu-west-1.amazonaws.com/shs/?token=t"
ENDED = JobRunInfo("00app", "00run", state="FAILED", state_details="Job failed, ExitCode: 1", dashboard=UI)


@pytest.mark.parametrize(
    ("info", "result", "kind", "said"),
    [
        (
            ENDED,
            None,
            DependencyError,
            f"ended FAILED: Job failed, ExitCode: 1; nothing was published (Spark UI: {UI})",
        ),
        (
            replace(ENDED, dashboard=""),
            None,
            DependencyError,
            "nothing was published (its logs: aws emr-serverless get-dashboard-for-job-run --application-id 00app "
            "--job-run-id 00run)",
        ),
        (
            ENDED,
            JobResult("a1", 2, "--decode json: bad"),
            InvalidStateError,
            f"--decode json: bad; EMR Serverless job run 00run ended FAILED; nothing was published (Spark UI: {UI})",
        ),
        (
            ENDED,
            JobResult("a1", 3, "lost the leases of 2 shards; nothing was published"),
            LeaseLostError,
            "lost the leases of 2 shards; nothing was published; EMR Serverless job run 00run ended FAILED "
            f"(Spark UI: {UI})",
        ),
    ],
    ids=["spark-failed", "no-dashboard", "bad-input", "lease-lost"],
)
def test_a_failed_job_run_is_its_exit_codes_error_saying_nothing_was_published_and_where_to_look(
    info: JobRunInfo, result: JobResult | None, kind: type[Exception], said: str
) -> None:
    error = failed(info, result)
    assert type(error) is kind
    assert "EMR Serverless job run 00run ended FAILED" in str(error) and str(error).endswith(said), error


def test_a_job_run_whose_read_was_denied_is_that_error_its_line_first() -> None:
    said = "access denied: kinesis:GetRecords on arn:aws:kinesis:…:stream/s for arn:…:assumed-role/job/1 (…)"
    error = failed(ENDED, JobResult("a1", 2, said, kind="AccessDeniedError"))
    assert type(error) is AccessDeniedError
    assert str(error) == f"{said}; EMR Serverless job run 00run ended FAILED; nothing was published (Spark UI: {UI})"
