"""emr_serverless: one value, checked when made, the same from every adapter."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.serverless.settings import TIMEOUT_MINUTES, ServerlessSettings
from kinesis_batch.settings import StreamSettings

ROLE = "arn:aws:iam::123456789012:role/job"
ENV = "s3://bucket/envs/kinesis-batch-0.1.0-py3.11-x86_64.tar.gz"
GOOD = {"application_id": "00abc123", "execution_role_arn": ROLE, "environment": ENV}


@pytest.mark.parametrize(
    "conf",
    [
        {"spark.executor.cores": "4", "spark.executor.memory": "16g", "spark.driver.memory": "2048m"},
        {"spark.executor.memoryOverhead": "1.5g", "spark.emr-serverless.executor.disk": "50G"},
        {"spark.dynamicAllocation.enabled": "false", "spark.executor.instances": "10", "spark.ui.retainedJobs": "x"},
    ],
)
def test_spark_settings_spark_takes_are_taken(conf: dict[str, str]) -> None:
    assert ServerlessSettings.of({**GOOD, "conf": conf}) is not None


def test_a_table_of_settings_is_made_into_the_value_with_emr_serverless_defaults() -> None:
    made = ServerlessSettings.of({**GOOD, "conf": {"spark.executor.cores": "2"}})
    assert made == ServerlessSettings("00abc123", ROLE, ENV, (("spark.executor.cores", "2"),), TIMEOUT_MINUTES)
    assert made.role_account == "123456789012"
    assert ServerlessSettings.of(made.to_json()) == made


@pytest.mark.parametrize("value", [None, {}, {"application_id": "", "execution_role_arn": "", "environment": ""}])
def test_nothing_given_is_not_set(value: Any) -> None:
    assert ServerlessSettings.of(value) is None


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"application_id": "App-1"}, "emr_serverless.application_id: 'App-1' is not an application id"),
        ({"execution_role_arn": "job"}, "emr_serverless.execution_role_arn: 'job' is not an IAM role ARN"),
        ({"environment": "/tmp/env.tar.gz"}, "emr_serverless.environment: '/tmp/env.tar.gz' is not the s3://"),
        ({"environment": "s3://b/env.zip"}, "emr_serverless.environment: 's3://b/env.zip' is not the s3://"),
        ({"timeout_minutes": 10_081}, "emr_serverless.timeout_minutes: 10081 is not in 1..10080"),
        ({"timeout_minutes": "10"}, "emr_serverless.timeout_minutes: '10' is not a whole number"),
        ({"timeout_minutes": 0}, "emr_serverless.timeout_minutes: 0 is not in 1..10080"),
        ({"conf": {"spark.pyspark.python": "/usr/bin/python3"}}, "emr_serverless.conf: spark.pyspark.python is set"),
        (
            {"conf": {"spark.pyspark.driver.python": "python3.9"}},
            "emr_serverless.conf: spark.pyspark.driver.python is set by kinesis-batch for the job from the archive of "
            "emr_serverless.environment",
        ),
        ({"conf": {"spark.archives": "x"}}, "emr_serverless.conf: spark.archives is set by kinesis-batch"),
        ({"conf": {"spark.executorEnv.PYTHONPATH": "x"}}, "emr_serverless.conf: spark.executorEnv.PYTHONPATH is set"),
        ({"conf": {"spark.speculation": "true"}}, "emr_serverless.conf: spark.speculation is set by kinesis-batch"),
        ({"conf": "spark.x=1"}, "emr_serverless.conf: 'spark.x=1' is not a table of Spark settings"),
        (
            {"conf": {"spark.executor.cores": "abc"}},
            "emr_serverless.conf: spark.executor.cores='abc': Spark takes a whole",
        ),
        (
            {"conf": {"spark.executor.memory": "lots"}},
            "emr_serverless.conf: spark.executor.memory='lots': Spark takes a size",
        ),
        (
            {"conf": {"spark.dynamicAllocation.enabled": "yes"}},
            "emr_serverless.conf: spark.dynamicAllocation.enabled='yes': Spark takes true or false there",
        ),
        ({"application": "x"}, "emr_serverless.application: not a setting"),
        ({"environment": ""}, "emr_serverless.environment: needed with the other emr_serverless settings"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(change: dict[str, Any], said: str) -> None:
    with pytest.raises(IllegalArgumentError) as raised:
        ServerlessSettings.of({**GOOD, **change})
    assert str(raised.value).startswith(said), str(raised.value)


def test_a_stream_setting_from_a_streams_file_entry_or_dag_params_and_back_to_json() -> None:
    settings = StreamSettings.from_mapping(
        {"stream": "s", "output": "s3://b/t", "format": "delta", "emr_serverless": GOOD}
    )
    assert settings.emr_serverless == ServerlessSettings.of(GOOD)
    assert StreamSettings.from_mapping(settings.to_json()) == settings
    assert StreamSettings.from_mapping({"stream": "s", "output": "o", "emr_serverless": None}).emr_serverless is None


def test_a_job_run_and_a_spark_connect_server_both_is_refused() -> None:
    with pytest.raises(IllegalArgumentError, match="--spark-remote and emr_serverless both say where the read runs"):
        StreamSettings.from_mapping({"stream": "s", "output": "o", "spark_remote": "sc://h:1", "emr_serverless": GOOD})
