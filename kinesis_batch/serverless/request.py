"""Pure: the StartJobRun request of a read step, made in this one place for every adapter: the
job driver's entry point and argument, and the Spark settings that give the driver and the
executors the environment archive and the release's Python of its version."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kinesis_batch.environment import Package
from kinesis_batch.serverless.naming import GroupJobName, JobName
from kinesis_batch.serverless.settings import ServerlessSettings

DRIVER_ENV = "spark.emr-serverless.driverEnv."


def spark_settings(settings: ServerlessSettings, python: str, interpreter: str, arch: str) -> dict[str, str]:
    """The user's ``conf``, then kinesis-batch's own (which ``conf`` may not set): the archive
    unpacked as ``environment`` on every node and put on the Python path, the image's Python
    of the archive's version on the driver and the executors, and no speculative task (a copy
    would read a shard twice)."""
    archive = Package(settings.environment, python, arch)
    return {
        **dict(settings.conf),
        **dict(archive.settings),
        f"{DRIVER_ENV}PYSPARK_PYTHON": interpreter,
        f"{DRIVER_ENV}PYSPARK_DRIVER_PYTHON": interpreter,
        "spark.executorEnv.PYSPARK_PYTHON": interpreter,
        "spark.speculation": "false",
    }


def start_job_run(
    settings: ServerlessSettings,
    name: JobName | GroupJobName,
    *,
    entry_point: str,
    spec: str | Sequence[str],
    conf: dict[str, str],
    tags: dict[str, str],
) -> dict[str, Any]:
    """StartJobRun's parameters; ``spec``: the read step's spec, or a group's specs (one job
    run reading them side by side). The client token is the name's (the attempt's, or the
    group's job run's): a start retried by botocore starts one job run. Spark settings go as the
    ``spark-defaults`` classification (no quoting of ``sparkSubmitParameters``)."""
    arguments = [spec] if isinstance(spec, str) else list(spec)
    return {
        "applicationId": settings.application_id,
        "clientToken": name.client_token,
        "executionRoleArn": settings.execution_role_arn,
        "name": str(name),
        "jobDriver": {"sparkSubmit": {"entryPoint": entry_point, "entryPointArguments": arguments}},
        "configurationOverrides": {
            "applicationConfiguration": [{"classification": "spark-defaults", "properties": conf}],
        },
        "executionTimeoutMinutes": settings.timeout_minutes,
        "tags": tags,
    }


__all__ = ["DRIVER_ENV", "spark_settings", "start_job_run"]
