"""Bad input, one line each, before a lease is taken: against the stand-in and moto's S3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import emr_serverless_client, s3_settings
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError, KinesisBatchError, classify
from kinesis_batch.serverless.checks import check
from kinesis_batch.serverless.settings import ServerlessSettings
from tests.output.support import make_bucket, output_args
from tests.runs import cli
from tests.serverless.standin import ARCH, ROLE, StandIn
from tests.streams import StreamFactory

NAME = "kinesis-batch/kinesis-batch-s/run-1/0"


def settings(emr: StandIn, application: str, **change: Any) -> ServerlessSettings:
    environment = emr.environment(runs=False)  # the checks read its name and that it is there
    given = {"application_id": application, "execution_role_arn": ROLE, "environment": environment, **change}
    made = ServerlessSettings.of(given)
    assert made is not None
    return made


def staging() -> str:
    return f"s3://{make_bucket()}/t/_kinesis_batch/run-1"


def test_a_spark_application_on_a_release_with_the_environments_python_passes(emr_serverless: StandIn) -> None:
    target = check(
        emr_serverless_client(), settings(emr_serverless, emr_serverless.application()), s3=s3_settings(),
        staging=staging(), name=NAME,
    )  # fmt: skip
    assert (target.python, target.interpreter, target.arch) == ("3.11", "/usr/bin/python3.11", ARCH)


def bad_cases(emr: StandIn) -> list[tuple[dict[str, Any], dict[str, Any], type[KinesisBatchError], str]]:
    other = "aarch64" if ARCH == "x86_64" else "x86_64"
    return [  # (the application, settings, the error, what its line says)
        ({}, {"application_id": "0000nothere"}, InvalidStateError, "no EMR Serverless application 0000nothere"),
        ({"type": "Hive"}, {}, IllegalArgumentError, "is a Hive application, not a Spark one"),
        ({"release": "emr-6.15.0"}, {}, IllegalArgumentError, "runs emr-6.15.0, whose image has no Python 3.11"),
        (
            {"architecture": {"x86_64": "ARM64", "aarch64": "X86_64"}[ARCH]},
            {},
            IllegalArgumentError,
            "the environment was built for",
        ),
        (
            {},
            {"environment": f"s3://{make_bucket()}/e/kinesis-batch-0.1.0-py3.11-{ARCH}.tar.gz"},
            InvalidStateError,
            "does not exist (write it with `kinesis-batch package --python 3.11",
        ),
        (
            {},
            {"environment": f"s3://b/e/kinesis-batch-0.0.9-py3.11-{ARCH}.tar.gz"},
            IllegalArgumentError,
            "holds kinesis-batch 0.0.9, this is 0.1.0",
        ),
        ({}, {"environment": "s3://b/e/my-env.tar.gz"}, IllegalArgumentError, "its Python is not known"),
        (
            {},
            {"execution_role_arn": "arn:aws:iam::999999999999:role/job"},
            IllegalArgumentError,
            "is a role of account 999999999999; application",
        ),
        (
            {},
            {"environment": f"s3://b/e/kinesis-batch-0.1.0-py3.11-{other}.tar.gz"},
            IllegalArgumentError,
            "the environment was built for",
        ),
    ]


def test_every_bad_input_is_one_line_and_a_permanent_error(emr_serverless: StandIn) -> None:
    client = emr_serverless_client()
    for application_args, change, kind, said in bad_cases(emr_serverless):
        application = emr_serverless.application(**application_args)
        with pytest.raises(kind) as raised:
            check(
                client, settings(emr_serverless, application, **change), s3=s3_settings(), staging=staging(), name=NAME
            )
        assert said in str(raised.value) and "\n" not in str(raised.value), str(raised.value)
        assert classify(raised.value).exit_code == 2


def test_an_output_the_job_cannot_write_is_refused(emr_serverless: StandIn, tmp_path: Path) -> None:
    with pytest.raises(IllegalArgumentError, match="the output must be on S3 for the job run to write it"):
        check(
            emr_serverless_client(), settings(emr_serverless, emr_serverless.application()), s3=s3_settings(),
            staging=str(tmp_path / "_kinesis_batch" / "run-1"), name=NAME,
        )  # fmt: skip


def test_the_command_line_exits_2_before_any_lease_table_is_made(
    emr_serverless: StandIn, kinesis: Any, dynamodb: Any, streams: StreamFactory, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    name = streams.create(shards=1)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    application = emr_serverless.application(type="Hive")
    ran = cli("run", "--stream", name, *output, "--emr-serverless-application", application, "--execution-role", ROLE,
              "--environment", emr_serverless.environment(runs=False))  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    (line,) = ran.stderr.strip().splitlines()
    assert (
        line
        == f"kinesis-batch: error: emr_serverless.application_id: {application} is a Hive application, not a Spark one"
    )
    assert dynamodb.list_tables()["TableNames"] == []


def test_the_flags_name_themselves_in_their_mistakes(tmp_path: Path) -> None:
    ran = cli("run", "--stream", "s", "--output", str(tmp_path), "--emr-serverless-application", "00app")
    assert ran.returncode == 2
    assert ran.stderr.strip() == "kinesis-batch: error: --execution-role is needed with the other EMR Serverless flags"
    ran = cli("run", "--stream", "s", "--output", str(tmp_path), "--emr-serverless-application", "BAD",
              "--execution-role", ROLE, "--environment", "s3://b/e.tar.gz")  # fmt: skip
    assert ran.stderr.strip().startswith(
        "kinesis-batch: error: --emr-serverless-application: 'BAD' is not an application id"
    )
