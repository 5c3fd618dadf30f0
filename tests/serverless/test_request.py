"""The StartJobRun request, made in one place: the environment on every node, the image's Python."""

from __future__ import annotations

from kinesis_batch.serverless.naming import JobName
from kinesis_batch.serverless.request import spark_settings, start_job_run
from kinesis_batch.serverless.settings import ServerlessSettings

SETTINGS = ServerlessSettings(
    "00app",
    "arn:aws:iam::123456789012:role/job",
    "s3://b/e/kinesis-batch-0.1.0-py3.11-x86_64.tar.gz",
    conf=(("spark.executor.cores", "2"),),
    timeout_minutes=90,
)


def test_the_spark_settings_give_driver_and_executors_the_archive_and_the_images_python() -> None:
    conf = spark_settings(SETTINGS, "3.11", "/usr/bin/python3.11", "x86_64")
    assert conf["spark.archives"] == f"{SETTINGS.environment}#environment"
    for side in ("spark.executorEnv.", "spark.emr-serverless.driverEnv."):
        assert conf[f"{side}PYTHONPATH"] == "./environment"
        assert conf[f"{side}PYSPARK_PYTHON"] == "/usr/bin/python3.11"
    assert conf["spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON"] == "/usr/bin/python3.11"
    assert conf["spark.speculation"] == "false"  # a speculative copy would read a shard twice
    assert conf["spark.executor.cores"] == "2"  # the user's own


def test_the_request_names_the_attempt_and_takes_the_jobs_timeout_as_its_budget() -> None:
    name = JobName("kinesis-batch-clicks", "run-20261128", "0a1b")
    request = start_job_run(SETTINGS, name, entry_point="s3://o/e.py", spec="s3://o/s.json", conf={"a": "b"}, tags={})
    assert request["name"] == "kinesis-batch/kinesis-batch-clicks/run-20261128/0a1b"
    assert request["clientToken"] == "run-20261128-0a1b"  # a start botocore retries is one job run
    assert request["executionTimeoutMinutes"] == 90
    assert request["jobDriver"]["sparkSubmit"] == {
        "entryPoint": "s3://o/e.py",
        "entryPointArguments": ["s3://o/s.json"],
    }
    (classification,) = request["configurationOverrides"]["applicationConfiguration"]
    assert classification == {"classification": "spark-defaults", "properties": {"a": "b"}}
