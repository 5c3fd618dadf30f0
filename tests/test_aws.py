"""Clients come from the standard AWS environment, in one place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from devkit.limits_proxy import LimitsProxy
from devkit.stack import LocalStack

from kinesis_batch import aws
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.shards.listing import describe_stream
from tests.streams import StreamFactory, put


def test_clients_use_the_endpoints_from_the_standard_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS", "http://127.0.0.1:4001")
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:4002")
    assert aws.kinesis_client().meta.endpoint_url == "http://127.0.0.1:4001"
    assert aws.dynamodb_client().meta.endpoint_url == "http://127.0.0.1:4002"


def test_sessions_share_the_service_models_but_read_the_environment_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    first = aws.kinesis_client()
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS", "http://127.0.0.1:4003")
    second = aws.kinesis_client()
    assert (second.meta.region_name, second.meta.endpoint_url) == ("eu-west-1", "http://127.0.0.1:4003")
    assert first.meta.region_name != "eu-west-1"
    loaders = {id(aws.new_session()._session.get_component("data_loader")) for _ in range(3)}
    assert len(loaders) == 1, "each session parsed botocore's models again"


@pytest.mark.parametrize("make", [aws.kinesis_client, aws.dynamodb_client])
def test_a_client_without_a_region_is_a_clear_error_from_the_tree(make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(IllegalArgumentError, match=r"creating the \w+ client: .*set AWS_DEFAULT_REGION"):
        make()


def test_kinesis_client_leaves_retries_to_the_reader() -> None:
    # botocore would otherwise retry ProvisionedThroughputExceeded out of the reader's sight.
    assert aws.kinesis_client().meta.config.retries["total_max_attempts"] == 1


def test_arrival_timestamps_are_parsed_as_utc(kinesis, streams: StreamFactory) -> None:  # type: ignore[no-untyped-def]
    name = streams.create()
    put(kinesis, name, 1)
    shard_id = kinesis.list_shards(StreamName=name)["Shards"][0]["ShardId"]
    iterator = kinesis.get_shard_iterator(StreamName=name, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")
    record = kinesis.get_records(ShardIterator=iterator["ShardIterator"])["Records"][0]
    assert record["ApproximateArrivalTimestamp"].tzinfo is UTC


def test_fast_timestamp_parser_agrees_with_botocore_on_both_forms() -> None:
    from botocore.utils import parse_timestamp

    assert aws._epoch_timestamp(1700000000.123) == parse_timestamp(1700000000.123)
    assert aws._epoch_timestamp("2026-11-22T03:00:00Z") == parse_timestamp("2026-11-22T03:00:00Z")


ROLE = "arn:aws:iam::111111111111:role/kinesis-reader"


def test_a_role_is_assumed_at_the_sts_endpoint_given_else_where_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:4003")
    assert aws.sts_endpoint("eu-west-1") == "http://127.0.0.1:4003"
    assert aws.sts_endpoint("eu-west-1", "http://127.0.0.1:4004") == "http://127.0.0.1:4004"  # a connection's
    monkeypatch.delenv("AWS_ENDPOINT_URL_STS")
    assert aws.sts_endpoint("eu-west-1") == "https://sts.eu-west-1.amazonaws.com"


def test_a_roles_client_assumes_it_at_the_endpoint_it_was_given_not_the_environments(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a Spark task does with its spec's endpoint, in a worker that never had the environment's.
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9")  # nothing listens there
    client = aws.as_role(aws.kinesis_client(), ROLE, sts_endpoint_url=stack.dynamodb.url)  # moto_server's STS
    aws.assume_now(client, ROLE)
    assert client._request_signer._credentials.access_key.startswith("ASIA")  # type: ignore[attr-defined]


def test_a_roles_client_keeps_the_endpoint_and_renews_its_credentials_before_they_expire(
    stack: LocalStack, emulator: str, streams: StreamFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", stack.dynamodb.url)  # moto_server's STS
    name = streams.create(shards=1)
    with LimitsProxy(stack.kinesis[emulator].url) as proxy:
        client = aws.as_role(aws.kinesis_client(endpoint_url=proxy.url), ROLE, "lake-1")
        aws.assume_now(client, ROLE)
        assert describe_stream(client, name).name == name
        credentials = client._request_signer._credentials  # type: ignore[attr-defined]
        # 55 minutes on: five minutes left, inside botocore's mandatory refresh window (the fetcher's
        # cached answer lapses with them), as after a long read.
        credentials._expiry_time = datetime.now(UTC) + timedelta(minutes=5)
        credentials._refresh_using.__self__._cache.clear()
        assert describe_stream(client, name).name == name
    keys = proxy.access_keys["DescribeStreamSummary"]
    assert len(keys) == 2 and all(key.startswith("ASIA") for key in keys), keys
    assert client.meta.endpoint_url == proxy.url
