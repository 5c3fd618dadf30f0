"""Whether a shard has news past a position, asked of real emulators: every row of the probe's
table, and its calls stay within a shard's read limits (through the limits proxy)."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from devkit.limits_proxy import LimitsProxy
from devkit.stack import LocalStack

from kinesis_batch.aws import kinesis_client
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.listing import list_shards
from kinesis_batch.shards.positions import EndBound, StartPosition
from kinesis_batch.shards.probe import has_news
from tests.shards.test_deaggregation import aggregate
from tests.streams import StreamFactory, open_shards, put, split

BOTH = pytest.mark.parametrize("emulator", ["kinesalite", "kinesis-local"], indirect=True)
NOW = EndBound()
LIMITS = ReadLimits.unlimited()


def last_sequence(kinesis: Any, stream: str, shard_id: str) -> str:
    iterator = kinesis.get_shard_iterator(StreamName=stream, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")
    records = kinesis.get_records(ShardIterator=iterator["ShardIterator"], Limit=10_000)["Records"]
    return str(records[-1]["SequenceNumber"])


@BOTH
def test_an_empty_shard_has_no_news_and_a_record_is_news(kinesis: Any, streams: StreamFactory) -> None:
    name = streams.create(shards=1)
    (shard,) = list_shards(kinesis, name)
    start = StartPosition.trim_horizon()

    assert not has_news(kinesis, name, shard.shard_id, start, closed=False, end=NOW, limits=LIMITS)
    put(kinesis, name, 3)
    assert has_news(kinesis, name, shard.shard_id, start, closed=False, end=NOW, limits=LIMITS)


@BOTH
def test_a_shard_read_to_its_last_record_has_no_news_until_the_next(kinesis: Any, streams: StreamFactory) -> None:
    name = streams.create(shards=1)
    (shard,) = list_shards(kinesis, name)
    put(kinesis, name, 5)
    after = StartPosition.after(last_sequence(kinesis, name, shard.shard_id))

    assert not has_news(kinesis, name, shard.shard_id, after, closed=False, end=NOW, limits=LIMITS)
    put(kinesis, name, 1, start=5)
    assert has_news(kinesis, name, shard.shard_id, after, closed=False, end=NOW, limits=LIMITS)


def test_a_record_past_the_runs_bound_is_no_news(kinesis: Any, streams: StreamFactory) -> None:
    name = streams.create(shards=1)
    (shard,) = list_shards(kinesis, name)
    put(kinesis, name, 2)
    start = StartPosition.trim_horizon()

    before = EndBound(until=datetime.now(UTC) - timedelta(hours=1))
    assert not has_news(kinesis, name, shard.shard_id, start, closed=False, end=before, limits=LIMITS)
    now = EndBound(until=datetime.now(UTC))
    assert has_news(kinesis, name, shard.shard_id, start, closed=False, end=now, limits=LIMITS)


@BOTH
def test_a_closed_shard_has_news_its_end_and_its_new_children_none(
    kinesis: Any, streams: StreamFactory, stack: LocalStack, emulator: str
) -> None:
    name = streams.create(shards=1)
    (parent,) = list_shards(kinesis, name)
    put(kinesis, name, 4)
    after = StartPosition.after(last_sequence(kinesis, name, parent.shard_id))
    split(kinesis, name, open_shards(kinesis, name)[0])

    with LimitsProxy(stack.kinesis[emulator].url) as proxy:
        client = kinesis_client(endpoint_url=proxy.url)
        assert has_news(client, name, parent.shard_id, after, closed=True, end=NOW, limits=LIMITS)
        assert proxy.calls == {}  # Kinesis says a shard ended only past its last record: not asked
    for child in open_shards(kinesis, name):
        start = StartPosition.trim_horizon()
        assert not has_news(kinesis, name, child.shard_id, start, closed=False, end=NOW, limits=LIMITS)


def test_a_latest_start_is_news_without_a_call(streams: StreamFactory, stack: LocalStack, emulator: str) -> None:
    name = streams.create(shards=1)
    (shard,) = list_shards(kinesis_client(), name)
    with LimitsProxy(stack.kinesis[emulator].url) as proxy:
        client = kinesis_client(endpoint_url=proxy.url)
        assert has_news(client, name, shard.shard_id, StartPosition.latest(), closed=False, end=NOW, limits=LIMITS)
        assert proxy.calls == {}


def test_a_probe_is_one_iterator_and_one_call_and_rides_out_a_throttle_and_a_drop(
    streams: StreamFactory, stack: LocalStack, emulator: str
) -> None:
    name = streams.create(shards=1)
    (shard,) = list_shards(kinesis_client(), name)
    with LimitsProxy(stack.kinesis[emulator].url) as proxy:
        client = kinesis_client(endpoint_url=proxy.url)
        start = StartPosition.trim_horizon()
        assert not has_news(client, name, shard.shard_id, start, closed=False, end=NOW, limits=ReadLimits())
        assert proxy.calls == {"GetShardIterator": 1, "GetRecords": 1}

        for _ in range(5):  # the shard's GetShardIterator allowance for this second, spent elsewhere
            with contextlib.suppress(client.exceptions.ProvisionedThroughputExceededException):
                client.get_shard_iterator(StreamName=name, ShardId=shard.shard_id, ShardIteratorType="LATEST")
        proxy.drop("GetRecords")
        assert not has_news(client, name, shard.shard_id, start, closed=False, end=NOW, limits=ReadLimits())
        assert proxy.throttles["GetShardIterator"] >= 1
        assert proxy.dropped == {"GetRecords": 1}


def test_an_aggregate_read_part_way_is_news_and_read_to_its_last_user_record_is_not(
    kinesis: Any, streams: StreamFactory
) -> None:
    name = streams.create(shards=1)
    (shard,) = list_shards(kinesis, name)
    key, _, data = aggregate(("a", b"1"), ("b", b"2"), ("c", b"3"))
    sequence = kinesis.put_record(StreamName=name, Data=data, PartitionKey=key)["SequenceNumber"]

    part_way = StartPosition.after(sequence, 1)
    assert has_news(kinesis, name, shard.shard_id, part_way, closed=False, end=NOW, limits=LIMITS)
    read = StartPosition.after(sequence, 2)
    assert not has_news(kinesis, name, shard.shard_id, read, closed=False, end=NOW, limits=LIMITS)
