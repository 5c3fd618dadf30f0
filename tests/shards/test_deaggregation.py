"""KPL aggregation: records made by aws_kinesis_agg's RecordAggregator (the real KPL format)
come back as their user records, alone and through the reader on both emulators."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_kinesis_agg import messages_pb2
from aws_kinesis_agg.aggregator import RecordAggregator

from kinesis_batch.shards.deaggregation import MAGIC, user_records
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.listing import list_shards
from kinesis_batch.shards.positions import StartPosition
from kinesis_batch.shards.reader import ShardReader
from tests.faults import FaultyKinesis

BOTH = pytest.mark.parametrize("emulator", ["kinesalite", "kinesis-local"], indirect=True)
SHARD = "shardId-000000000000"
SEQ = "49680448449676558164270362024261260818428810667143200770"
T0 = datetime(2026, 11, 22, 3, 0, 0, tzinfo=UTC)


def aggregate(*records: tuple[str, bytes] | tuple[str, bytes, str]) -> tuple[str, str | None, bytes]:
    """One KPL aggregated record holding ``records`` (partition key, data[, explicit hash key])."""
    aggregator = RecordAggregator()
    for record in records:
        assert aggregator.add_user_record(*record) is None, "the test aggregate does not fit one record"
    agg_record = aggregator.clear_and_get()
    assert agg_record is not None
    partition_key, explicit_hash_key, data = agg_record.get_contents()
    assert data.startswith(MAGIC)
    return partition_key, explicit_hash_key or None, data


def with_digest(body: bytes) -> bytes:
    return MAGIC + body + hashlib.md5(body).digest()


def plain(data: bytes) -> list[tuple[int, str, bytes]]:
    return [(r.sub_sequence_number, r.partition_key, r.data) for r in user_records(SHARD, SEQ, "outer", data, T0)]


# -- the format, no I/O ----------------------------------------------------------------------


def test_aggregate_yields_its_user_records_with_sub_sequence_numbers_in_order() -> None:
    users = [("alpha", b"a0"), ("beta", b"b0"), ("alpha", b"a1"), ("gamma", b""), ("beta", b"\x00\xff" * 50)]
    _, _, data = aggregate(*users)
    records = list(user_records(SHARD, SEQ, "alpha", data, T0))
    assert [(r.sub_sequence_number, r.partition_key, r.data) for r in records] == [
        (i, key, value) for i, (key, value) in enumerate(users)
    ]
    assert {(r.shard_id, r.sequence_number, r.approximate_arrival_timestamp) for r in records} == {(SHARD, SEQ, T0)}
    assert all(r.explicit_hash_key is None for r in records)


def test_aggregate_carries_each_sub_records_explicit_hash_key() -> None:
    users = [("a", b"1", "100"), ("b", b"2"), ("c", b"3", "200"), ("d", b"4", "100")]
    _, _, data = aggregate(*users)
    records = list(user_records(SHARD, SEQ, "a", data, T0, explicit_hash_key="100"))
    assert [r.explicit_hash_key for r in records] == ["100", None, "200", "100"]


def test_plain_record_is_one_user_record_with_sub_sequence_zero() -> None:
    records = list(user_records(SHARD, SEQ, "pk", b"hello", T0, "42"))
    assert [(r.sub_sequence_number, r.partition_key, r.data, r.explicit_hash_key) for r in records] == [
        (0, "pk", b"hello", "42")
    ]


def _corrupt_digest(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 0x01])


def _corrupt_magic(data: bytes) -> bytes:
    return b"\xf4" + data[1:]


def _corrupt_body(data: bytes) -> bytes:
    # flips a byte inside the protobuf: the digest no longer matches
    middle = len(MAGIC) + 3
    return data[:middle] + bytes([data[middle] ^ 0x40]) + data[middle + 1 :]


@pytest.mark.parametrize(
    "data",
    [
        _corrupt_digest(aggregate(("k", b"v1"), ("k", b"v2"))[2]),
        _corrupt_magic(aggregate(("k", b"v1"), ("k", b"v2"))[2]),
        _corrupt_body(aggregate(("k", b"v1"), ("k", b"v2"))[2]),
        aggregate(("k", b"v1"), ("k", b"v2"))[2][:-1],  # truncated digest
        MAGIC,
        MAGIC + b"\x00" * 16,  # magic and a digest-sized tail, nothing in between
        with_digest(b"\xff\xff\xff\xff not a protobuf"),  # digest right, body not protobuf
        b"",
        b"plain text that is no aggregate",
    ],
    ids=[
        "bad_digest",
        "bad_magic",
        "bad_body",
        "truncated",
        "magic_only",
        "magic_and_digest_only",
        "not_protobuf",
        "empty",
        "plain",
    ],
)
def test_bytes_that_are_not_a_valid_aggregate_pass_through_as_a_plain_record(data: bytes) -> None:
    assert plain(data) == [(0, "outer", data)]


@pytest.mark.parametrize(
    "index_field",
    ["partition_key_index", "explicit_hash_key_index"],
)
def test_aggregate_pointing_outside_its_key_tables_is_a_plain_record(index_field: str) -> None:
    message = messages_pb2.AggregatedRecord()
    message.partition_key_table.append("k")
    message.explicit_hash_key_table.append("7")
    sub = message.records.add()
    sub.data = b"x"
    sub.partition_key_index = 0
    sub.explicit_hash_key_index = 0
    setattr(sub, index_field, 1)  # one past the table
    data = with_digest(message.SerializeToString())
    assert plain(data) == [(0, "outer", data)]
    # the same aggregate with the index in range does deaggregate (so the check above is not vacuous)
    setattr(sub, index_field, 0)
    assert plain(with_digest(message.SerializeToString())) == [(0, "k", b"x")]


# -- through the reader, on both emulators ---------------------------------------------------


def _put(kinesis: Any, stream: str, partition_key: str, data: bytes, explicit_hash_key: str | None = None) -> str:
    """PutRecord, as a producer sends a plain record or an aggregate (see :func:`_put_aggregate`)."""
    extra = {"ExplicitHashKey": explicit_hash_key} if explicit_hash_key else {}
    response = kinesis.put_record(StreamName=stream, PartitionKey=partition_key, Data=data, **extra)
    return str(response["SequenceNumber"])


def _put_aggregate(kinesis: Any, stream: str, users: list[tuple[str, bytes]]) -> str:
    partition_key, explicit_hash_key, data = aggregate(*users)
    return _put(kinesis, stream, partition_key, data, explicit_hash_key)


def _fill_mixed(kinesis: Any, stream: str) -> list[tuple[str, int, str, bytes]]:
    """Plain, aggregate of 5, plain, aggregate of 3, corrupted aggregate, plain.
    Returns the user records expected, as (sequence number, sub-sequence, partition key, data)."""
    expected: list[tuple[str, int, str, bytes]] = []
    seq = _put(kinesis, stream, "p", b"plain-0")
    expected.append((seq, 0, "p", b"plain-0"))
    first = [(f"user-{i % 3}", f"first-{i}".encode()) for i in range(5)]
    seq = _put_aggregate(kinesis, stream, first)
    expected += [(seq, i, key, data) for i, (key, data) in enumerate(first)]
    seq = _put(kinesis, stream, "p", b"plain-1")
    expected.append((seq, 0, "p", b"plain-1"))
    second = [("solo", b"second-0"), ("duo", b"second-1"), ("solo", b"second-2")]
    seq = _put_aggregate(kinesis, stream, second)
    expected += [(seq, i, key, data) for i, (key, data) in enumerate(second)]
    broken = _corrupt_digest(aggregate(("x", b"lost-0"), ("x", b"lost-1"))[2])
    seq = _put(kinesis, stream, "broken", broken)
    expected.append((seq, 0, "broken", broken))
    seq = _put(kinesis, stream, "p", b"plain-2")
    expected.append((seq, 0, "p", b"plain-2"))
    return expected


def _read(kinesis: Any, stream: str, start: StartPosition) -> tuple[list[tuple[str, int, str, bytes]], ShardReader]:
    shard = list_shards(kinesis, stream)[0]
    reader = ShardReader(FaultyKinesis(kinesis), stream, shard, start, limits=ReadLimits.unlimited())
    return [(r.sequence_number, r.sub_sequence_number, r.partition_key, r.data) for r in reader], reader


@BOTH
def test_reader_deaggregates_kpl_records_mixed_with_plain_ones(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    expected = _fill_mixed(kinesis, stream)
    got, reader = _read(kinesis, stream, StartPosition.trim_horizon())
    assert got == expected
    result = reader.result()
    assert (result.last_sequence_number, result.last_sub_sequence_number) == expected[-1][:2]
    assert result.records == len(expected) == 12
    assert result.bytes == sum(len(data) for *_, data in expected)


@BOTH
def test_resuming_inside_an_aggregate_skips_the_sub_records_at_or_below_the_checkpoint(
    kinesis: Any, streams: Any
) -> None:
    stream = streams.create(shards=1)
    expected = _fill_mixed(kinesis, stream)
    aggregate_seq = expected[1][0]
    assert [e[1] for e in expected if e[0] == aggregate_seq] == [0, 1, 2, 3, 4]
    for checkpoint_sub in (0, 2, 4):
        got, _ = _read(kinesis, stream, StartPosition.after(aggregate_seq, checkpoint_sub))
        first_unread = expected.index((aggregate_seq, checkpoint_sub, *expected[1 + checkpoint_sub][2:])) + 1
        assert got == expected[first_unread:], f"after sub-record {checkpoint_sub}"
    # a checkpoint on the plain record before the aggregate resumes with the whole aggregate
    got, _ = _read(kinesis, stream, StartPosition.after(expected[0][0], 0))
    assert got == expected[1:]


def test_expired_iterator_after_an_aggregate_resumes_after_it_without_repeating_sub_records(
    kinesis: Any, streams: Any
) -> None:
    stream = streams.create(shards=1)
    expected = _fill_mixed(kinesis, stream)
    shard = list_shards(kinesis, stream)[0]
    # one Kinesis record a page; the iterator expires after the page holding the first aggregate
    faulty = FaultyKinesis(kinesis).fail("get_records", "ExpiredIteratorException", calls={2})
    reader = ShardReader(
        faulty, stream, shard, StartPosition.after(expected[1][0], 1), limits=ReadLimits(None, None, 1)
    )

    got = [(r.sequence_number, r.sub_sequence_number, r.partition_key, r.data) for r in reader]

    assert got == expected[3:]
    renewal = faulty.of("get_shard_iterator")[1].params
    assert (renewal["ShardIteratorType"], renewal["StartingSequenceNumber"]) == (
        "AFTER_SEQUENCE_NUMBER",
        expected[1][0],
    )
