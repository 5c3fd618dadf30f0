"""Values of a stream's shards and records: sequence numbers compared as integers (never as text)
up to the API's 129 digits, shards as ListShards describes them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.shards.model import MAX_HASH_KEY, MAX_SEQUENCE_NUMBER, Record, Shard, sequence_key

SEQUENCES = st.integers(0, MAX_SEQUENCE_NUMBER)


@given(SEQUENCES, SEQUENCES)
def test_sequence_numbers_compare_as_the_integers_they_stand_for(a: int, b: int) -> None:
    assert (sequence_key(str(a)) < sequence_key(str(b))) is (a < b)


@pytest.mark.parametrize("text", ["", "12a", "-1", "1.0", "١٢", "1" * 130, " 1"])
def test_what_kinesis_cannot_send_is_refused(text: str) -> None:
    with pytest.raises(IllegalArgumentError, match="sequence number"):
        sequence_key(text)


def test_a_shard_as_list_shards_describes_it() -> None:
    item = {
        "ShardId": "shardId-000000000003",
        "ParentShardId": "shardId-000000000001",
        "AdjacentParentShardId": "shardId-000000000002",
        "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": str(MAX_HASH_KEY // 2)},
        "SequenceNumberRange": {"StartingSequenceNumber": "49" + "0" * 54, "EndingSequenceNumber": "49" + "9" * 54},
    }
    shard = Shard.from_api(item)
    assert shard.closed and shard.parent_ids == ("shardId-000000000001", "shardId-000000000002")
    assert shard.ending_hash_key == MAX_HASH_KEY // 2
    fresh = Shard.from_api({"ShardId": "shardId-000000000000"})
    assert not fresh.closed and fresh.parent_ids == () and fresh.ending_hash_key == MAX_HASH_KEY


def test_a_records_position_orders_it_in_its_shard() -> None:
    at = datetime(2026, 11, 29, tzinfo=UTC)
    records = [
        Record("s", "10", 1, "k", b"", at),
        Record("s", "9", 5, "k", b"", at),
        Record("s", "10", 0, "k", b"", at),
    ]
    assert [(r.sequence_number, r.sub_sequence_number) for r in sorted(records, key=lambda r: r.position)] == [
        ("9", 5),
        ("10", 0),
        ("10", 1),
    ]
