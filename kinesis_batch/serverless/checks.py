"""What is checked before a run takes a lease, so a mistake is one line and exit 2 rather than
a job run that fails minutes later: the application (there, a Spark one, on a release with a
Python of the environment's version, of the environment's machine), the environment archive
(there, made by this kinesis-batch), the execution role (of the application's account) and the
output (on S3, where the job can write it)."""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass
from typing import Any

from kinesis_batch.aws import S3Settings, aws_call
from kinesis_batch.environment import ArchiveName
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError
from kinesis_batch.serverless import releases
from kinesis_batch.serverless.settings import ServerlessSettings
from kinesis_batch.storage.place import Place, is_s3

#: The application's ``architecture`` against the archive's machine (``kinesis-batch package --arch``).
ARCHITECTURES = {"X86_64": "x86_64", "ARM64": "aarch64"}
_APPLICATION_ARN = re.compile(r"arn:aws[a-z-]*:emr-serverless:[^:]*:(\d{12}):/applications/.+")
#: A job run's name is at most this long (StartJobRun).
NAME_LIMIT = 256


@dataclass(frozen=True)
class Target:
    """Where the job runs, once checked: the release, and the Python the job runs on."""

    release_label: str
    python: str
    interpreter: str
    arch: str


def check(client: Any, settings: ServerlessSettings, *, s3: S3Settings, staging: str, name: str) -> Target:
    """Every check, in the order a user fixes them; one error each. ``staging``: the batch's
    staging URI (the job writes there); ``name``: the job run's name."""
    if not is_s3(staging):
        raise IllegalArgumentError(
            f"emr_serverless: the output must be on S3 for the job run to write it, not {staging.rsplit('/', 2)[0]}"
        )
    if len(name) > NAME_LIMIT:
        raise IllegalArgumentError(f"emr_serverless: the lease table's name is too long for a job run's name ({name})")
    application = _application(client, settings.application_id)
    archive = _archive(settings.environment)
    target = _target(application, archive)
    _role(settings, application)
    parent, _, file = settings.environment.rpartition("/")
    if not Place(parent, s3).child(file).exists():
        raise InvalidStateError(
            f"emr_serverless.environment: {settings.environment} does not exist (write it with `kinesis-batch package "
            f"--python {archive.python} --arch {archive.arch} --output {parent}`)"
        )
    return target


def _application(client: Any, application_id: str) -> dict[str, Any]:
    def missing(error: Exception) -> InvalidStateError:
        return InvalidStateError(
            f"emr_serverless.application_id: no EMR Serverless application {application_id} in this account and "
            f"region ({error})"
        )

    answer = aws_call(
        "GetApplication",
        application_id,
        lambda: client.get_application(applicationId=application_id),
        codes={"ResourceNotFoundException": missing},
    )
    application = dict(answer["application"])
    if str(application.get("type", "")).upper() != "SPARK":
        raise IllegalArgumentError(
            f"emr_serverless.application_id: {application_id} is a {application.get('type')} application, "
            "not a Spark one"
        )
    if application.get("state") in ("TERMINATED", "STOPPING"):
        raise InvalidStateError(f"emr_serverless.application_id: {application_id} is {application['state']}")
    return application


def _archive(environment: str) -> ArchiveName:
    archive = ArchiveName.of(environment)
    if archive is None:
        raise IllegalArgumentError(
            f"emr_serverless.environment: {environment} is not named as `kinesis-batch package` names its archives "
            "(kinesis-batch-VERSION-pyX.Y-ARCH.tar.gz), so its Python is not known"
        )
    version = importlib.metadata.version("kinesis-batch")
    if archive.version != version:
        raise IllegalArgumentError(
            f"emr_serverless.environment: {environment} holds kinesis-batch {archive.version}, this is {version} "
            "(the job must run the same: `kinesis-batch package` again)"
        )
    return archive


def _target(application: dict[str, Any], archive: ArchiveName) -> Target:
    label = str(application.get("releaseLabel", ""))
    pythons = releases.pythons(label)
    if archive.python not in pythons:
        has = f"its Pythons are {', '.join(pythons)}" if pythons else "its Pythons are not known here"
        raise IllegalArgumentError(
            f"emr_serverless: application {application.get('applicationId')} runs {label}, whose image has no Python "
            f"{archive.python} for the environment ({has}): package for one of them, or use another release"
        )
    machine = ARCHITECTURES.get(str(application.get("architecture") or "X86_64"), "")
    if machine != archive.arch:
        raise IllegalArgumentError(
            f"emr_serverless: application {application.get('applicationId')} runs on "
            f"{application.get('architecture') or 'X86_64'}, the environment was built for {archive.arch}"
        )
    return Target(label, archive.python, pythons[archive.python], archive.arch)


def _role(settings: ServerlessSettings, application: dict[str, Any]) -> None:
    match = _APPLICATION_ARN.fullmatch(str(application.get("arn", "")))
    if match is not None and match.group(1) != settings.role_account:
        raise IllegalArgumentError(
            f"emr_serverless.execution_role_arn: {settings.execution_role_arn} is a role of account "
            f"{settings.role_account}; application {settings.application_id}'s account {match.group(1)} cannot pass it"
        )


__all__ = ["ARCHITECTURES", "Target", "check"]
