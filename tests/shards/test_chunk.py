"""A page's user records as columns (pure): aggregates unpacked with their sub-sequence numbers,
the records a resume already read dropped, cut and joined in order, and records made from
them equal to the reader's Record objects (tables of cases)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kinesis_batch.shards.chunk import Chunk, unpack
from kinesis_batch.shards.deaggregation import MAGIC
from kinesis_batch.shards.model import Record
from kinesis_batch.shards.page import RecordColumns
from tests.shards.test_deaggregation import aggregate

SHARD = "shardId-000000000007"
AGGREGATE = aggregate(("a", b"one"), ("b", b"two", "170141183460469231731687303715884105728"))[2]


def page(*records: tuple[str, bytes]) -> RecordColumns:
    """A page's records, (sequence number, data) each, arriving 1 ms apart from 1 s."""
    return RecordColumns(
        sequence_numbers=[s for s, _ in records],
        arrivals_ms=[1_000 + n for n in range(len(records))],
        partition_keys=[f"k{s}" for s, _ in records],
        data=[d for _, d in records],
    )


def rows(chunk: Chunk) -> list[tuple[str, int, str, bytes, int]]:
    return list(
        zip(
            chunk.sequence_numbers,
            chunk.sub_sequence_numbers,
            chunk.partition_keys,
            chunk.data,
            chunk.arrivals_ms,
            strict=True,
        )
    )


@pytest.mark.parametrize(
    ("records", "stop", "expected"),
    [
        ([], 0, []),
        ([("1", b"x"), ("2", b"")], 2, [("1", 0, "k1", b"x", 1000), ("2", 0, "k2", b"", 1001)]),
        ([("1", b"x"), ("2", b"y")], 1, [("1", 0, "k1", b"x", 1000)]),
        ([("1", AGGREGATE), ("2", b"y")], 2, [("1", 0, "a", b"one", 1000), ("1", 1, "b", b"two", 1000),
                                            ("2", 0, "k2", b"y", 1001)]),
        ([("1", MAGIC + b"not one")], 1, [("1", 0, "k1", MAGIC + b"not one", 1000)]),
    ],
    ids=["empty", "plain", "up-to-stop", "aggregate", "looks-aggregated"],
)  # fmt: skip
def test_a_page_unpacks_to_its_user_records(
    records: list[tuple[str, bytes]], stop: int, expected: list[tuple[str, int, str, bytes, int]]
) -> None:
    assert rows(unpack(SHARD, page(*records)[:stop])) == expected


def test_an_aggregates_explicit_hash_keys_are_kept_and_absent_ones_are_no_column() -> None:
    assert unpack(SHARD, page(("1", AGGREGATE))).explicit_hash_keys == [
        None,
        "170141183460469231731687303715884105728",
    ]
    assert unpack(SHARD, page(("1", b"x"))).explicit_hash_keys is None


@pytest.mark.parametrize(
    ("position", "left"),
    [((0, 0), 3), ((1, 0), 2), ((1, 1), 1), ((2, 0), 0), ((9, 0), 0)],
    ids=["before-all", "first-sub", "whole-aggregate", "all", "past-all"],
)
def test_a_resume_drops_what_it_already_read(position: tuple[int, int], left: int) -> None:
    chunk = unpack(SHARD, page(("1", AGGREGATE), ("2", b"y")))
    assert rows(chunk.after(position)) == rows(chunk)[3 - left :]


def test_cut_and_joined_chunks_are_the_chunk_again() -> None:
    chunk = unpack(SHARD, page(("1", AGGREGATE), ("2", b"y"), ("3", b"z")))
    parts = [chunk.cut(0, 1), chunk.cut(1, 1), chunk.cut(1, 4)]
    assert rows(Chunk.join(parts)) == rows(chunk)
    assert Chunk.join(parts).explicit_hash_keys == chunk.explicit_hash_keys
    assert chunk.cut(0, len(chunk)) is chunk


def test_its_records_are_the_readers_record_objects() -> None:
    chunk = unpack(SHARD, page(("1", AGGREGATE), ("2", b"y")))
    second = datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert list(chunk.records()) == [
        Record(SHARD, "1", 0, "a", b"one", second),
        Record(SHARD, "1", 1, "b", b"two", second, "170141183460469231731687303715884105728"),
        Record(SHARD, "2", 0, "k2", b"y", datetime(1970, 1, 1, 0, 0, 1, 1000, tzinfo=UTC)),
    ]
    assert chunk.size == len(b"one") + len(b"two") + len(b"y")
