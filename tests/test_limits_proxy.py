"""The endpoint that holds an emulator to Kinesis' per-shard read limits: it throttles like AWS,
cuts pages at 10 MiB, expires iterators; and a paced run through it is still exactly-once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from devkit.limits_proxy import MAX_BYTES_PER_CALL, LimitsProxy, ShardLimits
from devkit.stack import LocalStack

from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.config import RunConfig
from kinesis_batch.run import CatchUpRun
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.listing import list_shards
from kinesis_batch.shards.positions import StartPosition
from kinesis_batch.shards.reader import ShardReader
from tests.runs import assert_exactly_once, read_output
from tests.streams import StreamFactory, put, put_kib

KIB = 1024


@pytest.fixture
def proxy(stack: LocalStack, emulator: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[LimitsProxy]:
    # After the emulator fixture, which points the environment at the emulator itself.
    with LimitsProxy(stack.kinesis[emulator].url) as running:
        monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS", running.url)
        yield running


def only_shard_iterator(client: Any, stream: str, kind: str) -> tuple[Any, str]:
    (shard,) = list_shards(client, stream)
    response = client.get_shard_iterator(StreamName=stream, ShardId=shard.shard_id, ShardIteratorType=kind)
    return shard, response["ShardIterator"]


def test_more_than_five_calls_a_second_on_a_shard_are_throttled(proxy: LimitsProxy, streams: StreamFactory) -> None:
    kinesis = kinesis_client()
    name = streams.create(shards=1)
    put(kinesis, name, 3)
    shard, iterator = only_shard_iterator(kinesis, name, "LATEST")
    codes = []
    for _ in range(7):
        try:
            iterator = kinesis.get_records(ShardIterator=iterator, Limit=1)["NextShardIterator"]
            codes.append("ok")
        except kinesis.exceptions.ProvisionedThroughputExceededException:
            codes.append("throttled")
    assert codes[:5] == ["ok"] * 5 and codes[5:] == ["throttled"] * 2
    assert proxy.stats()[shard.shard_id].throttled == 2


def test_a_page_is_cut_at_ten_mib_and_the_next_resumes_after_it(proxy: LimitsProxy, streams: StreamFactory) -> None:
    kinesis = kinesis_client()
    name = streams.create(shards=1)
    sent = put_kib(kinesis, name, 6_000, kib=2)  # 12 MB in fewer than 10,000 records
    _, iterator = only_shard_iterator(kinesis, name, "TRIM_HORIZON")
    first = kinesis.get_records(ShardIterator=iterator, Limit=10_000)
    size = sum(len(r["Data"]) + len(r["PartitionKey"]) for r in first["Records"])
    assert size <= MAX_BYTES_PER_CALL < size + 2 * KIB + 3
    time.sleep(5.5)  # the 2 MiB/s credit pays back the 10 MiB burst
    second = kinesis.get_records(ShardIterator=first["NextShardIterator"], Limit=10_000)
    read = [r["Data"].decode() for r in first["Records"] + second["Records"]]
    assert read == sent


def test_an_iterator_expires_and_the_reader_renews_it(proxy: LimitsProxy, streams: StreamFactory) -> None:
    proxy.iterator_lifetime = 2.0  # AWS: 300 s
    kinesis = kinesis_client()
    name = streams.create(shards=1)
    put(kinesis, name, 20)
    shard, iterator = only_shard_iterator(kinesis, name, "TRIM_HORIZON")
    time.sleep(2.2)
    with pytest.raises(kinesis.exceptions.ExpiredIteratorException):
        kinesis.get_records(ShardIterator=iterator)

    # The reader sleeps long enough once, before its second call, for its iterator to expire. Its
    # clock stands still, so each call after the first is paced by a sleep: on the real clock a first
    # call slower than the pause (a loaded machine) led to no sleep before the second at all.
    pauses = iter([2.5])
    reader = ShardReader(
        kinesis,
        name,
        shard,
        StartPosition.trim_horizon(),
        limits=ReadLimits(records_per_call=10),
        clock=lambda: 0.0,
        sleep=lambda seconds: time.sleep(max(seconds, next(pauses, 0.0))),
    )
    assert len(list(reader)) == 20 and reader.iterator_renewals >= 1


def test_a_paced_run_through_the_limits_is_exactly_once_and_not_throttled(
    proxy: LimitsProxy, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    kinesis = kinesis_client()
    name = streams.create(shards=2)
    sent = put_kib(kinesis, name, 12_000)  # about 6 MiB per shard: several paced pages
    config = RunConfig.of(stream=name, output=str(tmp_path), worker_id="paced", lease_seconds=120)
    run = CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb_client(), spark=lambda: spark)
    report = run.run()

    assert report.records == len(sent)
    assert_exactly_once(read_output(tmp_path), sent)
    stats = proxy.stats()
    assert sum(s.throttled for s in stats.values()) <= 1  # the reader keeps to the limits itself
    assert sum(s.bytes for s in stats.values()) >= len(sent) * KIB


def test_scaled_limits_keep_aws_proportions_at_a_lower_rate(
    stack: LocalStack, emulator: str, streams: StreamFactory
) -> None:
    limits = ShardLimits.scaled(bytes_per_second=64 * KIB, calls_per_second=2)
    assert (limits.max_bytes_per_call, limits.max_records_per_call) == (320 * KIB, 10_000)  # 5 s of the rate
    with LimitsProxy(stack.kinesis[emulator].url, limits=limits) as proxy:
        kinesis = kinesis_client(endpoint_url=proxy.url)
        name = streams.create(shards=1)
        sent = put_kib(kinesis, name, 400)
        shard, iterator = only_shard_iterator(kinesis, name, "TRIM_HORIZON")
        first = kinesis.get_records(ShardIterator=iterator, Limit=10_000)
        size = sum(len(r["Data"]) + len(r["PartitionKey"]) for r in first["Records"])
        assert size <= 320 * KIB < size + KIB + 3
        codes = []
        for _ in range(2):  # two calls a second is the most: the second gets through, the third not
            try:
                kinesis.get_records(ShardIterator=first["NextShardIterator"], Limit=10)
                codes.append("ok")
            except kinesis.exceptions.ProvisionedThroughputExceededException:
                codes.append("throttled")
        assert codes == ["ok", "throttled"]
        assert proxy.stats()[shard.shard_id].throttled == 1
        assert [r["Data"].decode() for r in first["Records"]] == sent[: len(first["Records"])]
