"""A stream of another account, named by its ARN and read through a role: every Kinesis call (the
run's start and every Spark task's) is signed with the role's credentials and names the stream
by ARN, every DynamoDB call with the consumer's own; the records land once. A role that cannot
be assumed is one line, exit 2, before anything is made. (kinesis-local: kinesalite knows no
StreamARN.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from devkit.limits_proxy import ControlLimits, LimitsProxy
from devkit.stack import STATIC_ENV, LocalStack

from kinesis_batch.aws import dynamodb_client
from kinesis_batch.errors import POLICIES
from kinesis_batch.leases.store import LeaseStore
from tests.runs import assert_exactly_once, cli, read_output
from tests.streams import StreamFactory, put

ROLE = "arn:aws:iam::111111111111:role/kinesis-reader"
ON_KINESIS_LOCAL = pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)


def arn_of(kinesis: Any, name: str) -> str:
    return str(kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"])


@ON_KINESIS_LOCAL
def test_a_stream_named_by_arn_is_read_with_its_roles_credentials_and_the_tables_with_ours(
    proxies: tuple[LimitsProxy, LimitsProxy],
    kinesis: Any,
    streams: StreamFactory,
    stack: LocalStack,
    spark: Any,
    tmp_path: Path,
) -> None:
    kinesis_proxy, dynamodb_proxy = proxies
    name = streams.create(shards=2)
    sent = put(kinesis, name, 60)
    output = tmp_path / "out"
    env = {
        "AWS_ENDPOINT_URL_KINESIS": kinesis_proxy.url,
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_proxy.url,
        "AWS_ENDPOINT_URL_STS": stack.dynamodb.url,  # moto_server's STS hands out the role's keys
    }

    theirs_flags = ("--stream", arn_of(kinesis, name), "--role-arn", ROLE, "--external-id", "lake-1")
    ran = cli("run", *theirs_flags, "--output", str(output), "--read-limits", "none", env=env, spark=spark)

    assert ran.returncode == 0, ran.stderr[-3000:]
    assert_exactly_once(read_output(output), sent)
    # Where that consumer is, and its runs: read as the run was, by ARN with the role, the tables with ours.
    status = cli("status", *theirs_flags, "--output", str(output), "--json", env=env)
    assert status.returncode == 0, status.stderr[-3000:]
    shards = json.loads(status.stdout)
    assert len(shards) == 2 and all(shard["checkpoint"] and not shard["lease_owner"] for shard in shards), shards
    runs = cli("history", *theirs_flags, "--runs", "--json", env=env)
    assert runs.returncode == 0, runs.stderr[-3000:]
    assert [run["records"] for run in json.loads(runs.stdout)] == [len(sent)]
    ours = STATIC_ENV["AWS_ACCESS_KEY_ID"]
    theirs = set().union(*kinesis_proxy.access_keys.values())
    assert theirs and ours not in theirs and all(key.startswith("ASIA") for key in theirs), kinesis_proxy.access_keys
    assert {"GetShardIterator", "GetRecords", "ListShards", "DescribeStreamSummary"} <= set(kinesis_proxy.access_keys)
    assert set().union(*dynamodb_proxy.access_keys.values()) == {ours}, dynamodb_proxy.access_keys
    assert kinesis_proxy.named_by == {
        operation: {"StreamARN"} for operation in ("DescribeStreamSummary", "ListShards", "GetShardIterator")
    }
    leases = LeaseStore(dynamodb_client(), f"kinesis-batch-{name}").list_leases()
    assert len(leases) == 2 and all(lease.checkpoint.sentinel is None for lease in leases)


@ON_KINESIS_LOCAL
def test_a_role_that_cannot_be_assumed_is_one_line_exit_2_before_anything_is_made(
    kinesis: Any, streams: StreamFactory, stack: LocalStack, tmp_path: Path
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 3)
    with LimitsProxy(stack.dynamodb.url, control=ControlLimits.none()) as sts:
        consumer = "arn:aws:iam::000000000000:user/consumer"
        denied = f"User: {consumer} is not authorized to perform: sts:AssumeRole on resource: {ROLE}"
        sts.refuse("AssumeRole", "AccessDenied", denied)
        ran = cli(
            "run", "--stream", arn_of(kinesis, name), "--role-arn", ROLE, "--output", str(tmp_path / "out"),
            env={"AWS_ENDPOINT_URL_STS": sts.url},
        )  # fmt: skip

    assert ran.returncode == 2, ran.stderr[-3000:]
    (line,) = ran.stderr.strip().splitlines()
    assert line == (
        f"kinesis-batch: error: access denied: sts:AssumeRole on {ROLE} for {consumer} ({POLICIES}); --role-arn "
        f"{ROLE}: its trust policy must allow them (and --external-id when it asks one)"
    )
    assert sts.calls.get("AssumeRole", 0) >= 1
    assert not LeaseStore(dynamodb_client(), f"kinesis-batch-{name}").table_exists()
    assert not (tmp_path / "out").exists()
