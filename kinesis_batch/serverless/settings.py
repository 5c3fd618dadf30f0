"""``emr_serverless``: where a stream's read step runs when it runs as an EMR Serverless job run.
One frozen value, checked once when made, in the streams file, the DAG params, the command
line's flags and Dagster's Spark resource alike (each a mapping or flags made into this)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from kinesis_batch.bounds import Bound
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.options import not_a_setting

#: EMR Serverless' own default ``executionTimeoutMinutes`` (12 hours), and the longest a job may
#: be given here: a week, past which a lease table's batch is better cut smaller.
TIMEOUT_MINUTES = 720
MAX_TIMEOUT_MINUTES = 7 * 24 * 60
TIMEOUT_BOUND = Bound(1, MAX_TIMEOUT_MINUTES)
#: Spark settings kinesis-batch makes for the job itself (kinesis_batch.serverless.request):
#: set in ``conf``, they would undo the environment or read twice. The interpreters too: the
#: archive's packages are built for the release's own Python, and another one cannot import them.
OWNED = re.compile(
    r"spark\.archives|spark\.speculation|spark\.submit\.pyFiles|spark\.pyspark\.(driver\.)?python|"
    r"spark\.(executorEnv|emr-serverless\.driverEnv)\.(PYTHONPATH|PYSPARK_PYTHON|PYSPARK_DRIVER_PYTHON)"
)
#: Spark settings whose values Spark parses before any code of ours runs: a value it refuses fails
#: the job run at its start, as if it might pass on a retry. Checked here instead, in one line.
_WHOLE = re.compile(
    r"spark\.(executor|driver)\.cores|spark\.executor\.instances|spark\.task\.cpus|"
    r"spark\.dynamicAllocation\.(min|max|initial)Executors|spark\.task\.maxFailures"
)
_SIZE = re.compile(
    r"spark\.(executor|driver)\.(memory|memoryOverhead)|spark\.emr-serverless\.(executor|driver)\.disk|"
    r"spark\.driver\.maxResultSize"
)
_SIZE_VALUE = re.compile(r"\d+(\.\d+)?\s*([kmgtp]i?b?|b)?", re.IGNORECASE)
_BOOLEAN = re.compile(r"spark\.dynamicAllocation\.enabled|spark\.dynamicAllocation\.shuffleTracking\.enabled")
_APPLICATION = re.compile(r"[0-9a-z]{1,64}")
_ROLE = re.compile(r"arn:aws[a-z-]*:iam::(\d{12}):role/[\w+=,.@/-]{1,512}")
_NAME = "emr_serverless"


@dataclass(frozen=True)
class ServerlessSettings:
    """An EMR Serverless application to run the read step on, the role the job runs as, the
    environment archive ``kinesis-batch package`` wrote to S3, Spark settings of the user's own
    (executor sizes, logging), and the job's timeout: the run's budget, queueing included."""

    application_id: str
    execution_role_arn: str
    environment: str
    conf: tuple[tuple[str, str], ...] = ()
    timeout_minutes: int = TIMEOUT_MINUTES

    def __post_init__(self) -> None:
        if not isinstance(self.application_id, str) or not _APPLICATION.fullmatch(self.application_id):
            raise IllegalArgumentError(
                f"{_NAME}.application_id: {self.application_id!r} is not an application id (lower-case letters and "
                "digits, as `aws emr-serverless list-applications` shows it)"
            )
        if not isinstance(self.execution_role_arn, str) or not _ROLE.fullmatch(self.execution_role_arn):
            raise IllegalArgumentError(
                f"{_NAME}.execution_role_arn: {self.execution_role_arn!r} is not an IAM role ARN "
                "(arn:aws:iam::ACCOUNT:role/NAME)"
            )
        if not isinstance(self.environment, str) or not (
            self.environment.startswith("s3://") and self.environment.endswith(".tar.gz")
        ):
            raise IllegalArgumentError(
                f"{_NAME}.environment: {self.environment!r} is not the s3://….tar.gz archive `kinesis-batch package "
                "--output s3://…` wrote"
            )
        if isinstance(self.timeout_minutes, bool) or not isinstance(self.timeout_minutes, int):
            raise IllegalArgumentError(f"{_NAME}.timeout_minutes: {self.timeout_minutes!r} is not a whole number")
        TIMEOUT_BOUND.check(f"{_NAME}.timeout_minutes", self.timeout_minutes)
        for key, value in self.conf:
            if OWNED.fullmatch(key):
                raise IllegalArgumentError(
                    f"{_NAME}.conf: {key} is set by kinesis-batch for the job from the archive of "
                    f"{_NAME}.environment, not in conf"
                )
            _check_value(key, value)

    @property
    def role_account(self) -> str:
        """The account the execution role belongs to."""
        match = _ROLE.fullmatch(self.execution_role_arn)
        assert match is not None  # checked when made
        return match.group(1)

    @classmethod
    def of(cls, value: Any) -> ServerlessSettings | None:
        """From a streams-file table, DAG params or JSON (None or an empty mapping: not set)."""
        if value is None or isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise IllegalArgumentError(
                f"{_NAME}: {value!r} is not a table of application_id, execution_role_arn, environment, conf, "
                "timeout_minutes"
            )
        if not any(v not in (None, "", {}) for v in value.values()):
            return None
        names = [field.name for field in fields(cls)]
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise not_a_setting(unknown[0], names, within=f"{_NAME}.")
        for needed in ("application_id", "execution_role_arn", "environment"):
            if not value.get(needed):
                raise IllegalArgumentError(f"{_NAME}.{needed}: needed with the other emr_serverless settings")
        conf = value.get("conf") or {}
        if isinstance(conf, Mapping):
            conf = conf.items()
        try:
            pairs = tuple(sorted((str(key), str(setting)) for key, setting in conf))
        except (TypeError, ValueError):
            raise IllegalArgumentError(f"{_NAME}.conf: {conf!r} is not a table of Spark settings") from None
        timeout = value.get("timeout_minutes")
        return cls(
            application_id=value["application_id"],
            execution_role_arn=value["execution_role_arn"],
            environment=value["environment"],
            conf=pairs,
            timeout_minutes=TIMEOUT_MINUTES if timeout in (None, "") else timeout,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "application_id": self.application_id,
            "execution_role_arn": self.execution_role_arn,
            "environment": self.environment,
            "conf": dict(self.conf),
            "timeout_minutes": self.timeout_minutes,
        }


def _check_value(key: str, value: str) -> None:
    """A value Spark would refuse at the job's start, said now."""
    wanted = (
        "a whole number" if _WHOLE.fullmatch(key) and not value.strip().isdigit()
        else "a size such as 4g or 512m" if _SIZE.fullmatch(key) and not _SIZE_VALUE.fullmatch(value.strip())
        else "true or false" if _BOOLEAN.fullmatch(key) and value.strip().lower() not in ("true", "false")
        else ""
    )  # fmt: skip
    if wanted:
        raise IllegalArgumentError(f"{_NAME}.conf: {key}={value!r}: Spark takes {wanted} there")


__all__ = ["MAX_TIMEOUT_MINUTES", "OWNED", "TIMEOUT_MINUTES", "ServerlessSettings"]
