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

#: EMR Serverless' own default ``executionTimeoutMinutes`` (12 hours), and the longest a job may
#: be given here: a week, past which a lease table's batch is better cut smaller.
TIMEOUT_MINUTES = 720
MAX_TIMEOUT_MINUTES = 7 * 24 * 60
TIMEOUT_BOUND = Bound(1, MAX_TIMEOUT_MINUTES)
#: Spark settings kinesis-batch makes for the job itself (kinesis_batch.serverless.request):
#: set in ``conf``, they would undo the environment or read twice.
OWNED = re.compile(
    r"spark\.archives|spark\.speculation|spark\.submit\.pyFiles|"
    r"spark\.(executorEnv|emr-serverless\.driverEnv)\.(PYTHONPATH|PYSPARK_PYTHON|PYSPARK_DRIVER_PYTHON)"
)
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
        for key, _ in self.conf:
            if OWNED.fullmatch(key):
                raise IllegalArgumentError(
                    f"{_NAME}.conf: {key} is set by kinesis-batch for the job (from environment), not in conf"
                )

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
            raise IllegalArgumentError(f"{_NAME}.{unknown[0]}: not a setting (the settings: {', '.join(names)})")
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
            timeout_minutes=TIMEOUT_MINUTES if timeout in (None, "", 0) else timeout,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "application_id": self.application_id,
            "execution_role_arn": self.execution_role_arn,
            "environment": self.environment,
            "conf": dict(self.conf),
            "timeout_minutes": self.timeout_minutes,
        }


__all__ = ["MAX_TIMEOUT_MINUTES", "OWNED", "TIMEOUT_MINUTES", "ServerlessSettings"]
