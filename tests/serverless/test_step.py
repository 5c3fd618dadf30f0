"""A job run is judged by what it left for this attempt, never by its state alone."""

from __future__ import annotations

import pytest

from kinesis_batch.aws import emr_serverless_client, s3_settings
from kinesis_batch.errors import DependencyError
from kinesis_batch.output.place import Place
from kinesis_batch.serverless.attempt import Attempt, JobResult
from kinesis_batch.serverless.settings import ServerlessSettings
from kinesis_batch.serverless.step import JobRunRead
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
    read = JobRunRead(
        emr_serverless_client(), settings, {}, batch_id="run-1", table="kinesis-batch-s", stream="s",
        worker_id="w", staging=staging, s3=s3_settings(), progress=lambda line: None,
    )  # fmt: skip

    with pytest.raises(DependencyError, match="says SUCCESS but left no result for this attempt"):
        read.run()

    assert read.info is not None and read.info.state == "SUCCESS"
