"""Least privilege, checked against what a run really calls: a run into Delta on S3 with JSON
decoding and CloudWatch metrics, every AWS call it makes through botocore recorded (tests.iam),
each allowed by the worker's document `kinesis-batch iam-policy` prints for the same flags, and
each statement of it that covers such calls needed by one of them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.access.arns import Where
from tests.iam import allowed, recording
from tests.output.support import output_args
from tests.runs import cli
from tests.streams import StreamFactory, put

ACCOUNT = "123456789012"  # the local stack's (kinesalite's and moto's)
#: The services whose calls go through botocore (the table files go through pyarrow and delta-rs).
RECORDED = ("kinesis:", "dynamodb:", "cloudwatch:", "sts:", "glue:GetSchemaVersion")


def test_every_call_of_a_run_is_allowed_by_the_worker_policy_and_each_statement_is_needed(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=2)
    put(kinesis, name, 30, payload=lambda i: json.dumps({"i": i}).encode())
    put(kinesis, name, 2, start=30, payload=lambda i: b"not json")
    flags = (*output_args("delta", "s3", tmp_path, monkeypatch), "--decode", "json", "--metrics", "cloudwatch")
    where = Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))

    with recording() as recorder:
        ran = cli("run", "--stream", name, *flags, "--read-limits", "none", "--json", spark=spark)
    printed = cli(
        "iam-policy", "--stream", name, *flags, "--account", where.account, "--region", where.region, "--for", "worker"
    )

    assert ran.returncode == 0 and printed.returncode == 0, ran.stderr + printed.stderr
    assert json.loads(ran.stdout)["dead_letters"] == 2
    worker = json.loads(printed.stdout)
    stream = f"arn:aws:kinesis:{where.region}:{ACCOUNT}:stream/{name}"
    requests = sorted(set(recorder.requests(where, stream=stream)), key=str)
    denied = [request for request in requests if not allowed(worker, request)]
    assert denied == [], f"calls the printed policy does not allow: {denied}"
    for statement in worker["Statement"]:
        actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        if not all(action.startswith(RECORDED) for action in actions):
            continue
        without = {**worker, "Statement": [s for s in worker["Statement"] if s is not statement]}
        assert any(not allowed(without, request) for request in requests), f"{statement['Sid']}: no call needed it"
