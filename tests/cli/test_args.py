"""The command line's flags made into a stream's settings: a mistake is one line naming the flag
the user typed, never a streams-file field, and nothing given is never silently something else."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import Field
from typing import Any

import pytest

from kinesis_batch.bounds import ANY, Bound
from kinesis_batch.cli.args import build_parser, named_stream, stream_settings, stream_table
from kinesis_batch.cli.status import stream_kinesis
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.options import flag, kind
from kinesis_batch.serverless.settings import TIMEOUT_MINUTES
from kinesis_batch.settings import CLI, OPTIONS, offered

ROLE = "arn:aws:iam::123456789012:role/job"
JOB = ("--emr-serverless-application", "00app", "--execution-role", ROLE, "--environment", "s3://b/env.tar.gz")


def _settings(*flags: str):  # type: ignore[no-untyped-def]
    args = build_parser().parse_args(["run", "--stream", "s", "--output", "/o", *flags])
    return stream_settings(args)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--emr-serverless-timeout-minutes", "0"), "--emr-serverless-application is needed with the other EMR"),
        ((*JOB, "--emr-serverless-timeout-minutes", "0"), "--emr-serverless-timeout-minutes: 0 is not in 1..10080"),
        (
            (*JOB, "--emr-serverless-conf", "spark.pyspark.python=/opt/py/bin/python3"),
            "--emr-serverless-conf: spark.pyspark.python is set by kinesis-batch for the job from the archive of "
            "--environment, not in conf",
        ),
        ((*JOB, "--emr-serverless-conf", "spark.archives=s3://b/x.tar.gz"), "--emr-serverless-conf: spark.archives"),
        ((*JOB, "--spark-master", "spark://h:7077"), "--spark-master and the EMR Serverless flags both say where"),
        ((*JOB, "--spark-remote", "sc://h:15002"), "--spark-remote and the EMR Serverless flags both say where"),
        (("--spark-remote", "http://h:15002"), "--spark-remote: 'http://h:15002' is not a Spark Connect URL"),
    ],
    ids=["timeout-alone", "timeout-0", "interpreter", "archives", "master-and-job", "remote-and-job", "remote-url"],
)
def test_a_mistake_is_one_line_naming_the_flag(flags: tuple[str, ...], says: str) -> None:
    with pytest.raises(IllegalArgumentError) as refused:
        _settings(*flags)
    assert str(refused.value).startswith(says), str(refused.value)
    assert "\n" not in str(refused.value) and "emr_serverless" not in str(refused.value)


def test_the_job_run_flags_keep_emr_serverless_defaults_when_not_given() -> None:
    job_run = _settings(*JOB).emr_serverless
    assert job_run is not None and job_run.timeout_minutes == TIMEOUT_MINUTES
    assert _settings(*JOB, "--emr-serverless-timeout-minutes", "30").emr_serverless.timeout_minutes == 30  # type: ignore[union-attr]


def _out_of_bounds(bound: Bound) -> float:
    """A value the bound refuses: under its low end, else over its high end."""
    if bound.low is not None:
        return bound.low if bound.above else bound.low - 1
    assert bound.high is not None
    return bound.high + 1


BOUNDED = [option for option in offered(CLI) if option.metadata["bound"] != ANY]


@pytest.mark.parametrize("option", BOUNDED, ids=[option.name for option in BOUNDED])
def test_every_bounded_flag_out_of_bounds_is_one_line_naming_that_flag_never_a_field(option: Field[Any]) -> None:
    value = _out_of_bounds(option.metadata["bound"])
    typed = str(int(value)) if kind(option) is int else str(value)
    with pytest.raises(IllegalArgumentError) as refused:
        _settings(flag(option), typed)
    said = str(refused.value)
    assert said.startswith(f"{flag(option)}: ") and "\n" not in said, said
    assert not any(f"{other.name}:" in said or f"{other.name} " in said for other in OPTIONS if "_" in other.name), said


@pytest.mark.parametrize(
    ("command", "stream", "table"),
    [
        ("status", "clicks", "kinesis-batch-clicks"),
        ("history", "arn:aws:kinesis:eu-west-1:111111111111:stream/clicks", "kinesis-batch-clicks"),
    ],
)
def test_a_stream_of_another_account_is_read_by_arn_its_tables_named_by_its_name(
    command: str, stream: str, table: str
) -> None:
    args = build_parser().parse_args([command, "--stream", stream, "--role-arn", ROLE, "--external-id", "lake-1"])

    assert (named_stream(args), stream_table(args)) == ("clicks", table)
    assert (args.role_arn, args.external_id) == (ROLE, "lake-1")


@pytest.mark.parametrize(
    ("flags", "says", "read"),
    [
        (("--stream", "arn:aws:kinesis:eu-west-1:stream"), "--stream: 'arn:aws:kinesis:eu-west-1:stream' is not a",
         stream_table),
        (("--stream", "clicks", "--role-arn", "reader"), "--role-arn: 'reader' is not an IAM role ARN", stream_kinesis),
    ],
)  # fmt: skip
def test_a_mistaken_stream_or_role_of_status_is_one_line(
    flags: tuple[str, ...], says: str, read: Callable[[argparse.Namespace], object]
) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        read(build_parser().parse_args(["status", *flags]))
