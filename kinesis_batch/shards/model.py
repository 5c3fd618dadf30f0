"""Values that describe a stream's shards and its records.

Sequence numbers stay the decimal strings Kinesis sends (so they round-trip exactly) and are
compared as integers: as text "9" > "10". The API allows up to 129 decimal digits; AWS and
kinesalite send 56 (about 2**185, wider than any fixed-size integer type).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kinesis_batch.errors import IllegalArgumentError

MAX_SEQUENCE_DIGITS = 129  # the API's pattern: 0|([1-9]\d{0,128})
MAX_SEQUENCE_NUMBER = 10**MAX_SEQUENCE_DIGITS - 1
MAX_HASH_KEY = 2**128 - 1


def stream_argument(stream: str) -> dict[str, Any]:
    """How a Kinesis call names ``stream``: by its ARN when it is one (a stream of another
    account, shared through its resource policy, is reached only so), else by its name."""
    return {"StreamARN": stream} if stream.startswith("arn:") else {"StreamName": stream}


def sequence_key(sequence_number: str) -> int:
    """The integer a sequence number stands for; raises on anything Kinesis cannot send."""
    if not isinstance(sequence_number, str) or not sequence_number.isascii() or not sequence_number.isdigit():
        raise IllegalArgumentError(f"not a sequence number: {sequence_number!r} (expected decimal digits)")
    if len(sequence_number) > MAX_SEQUENCE_DIGITS:
        raise IllegalArgumentError(f"sequence number {sequence_number} is longer than {MAX_SEQUENCE_DIGITS} digits")
    return int(sequence_number)


@dataclass(frozen=True)
class Shard:
    """One shard as ListShards describes it. ``ending_sequence_number`` is set once closed."""

    shard_id: str
    parent_shard_id: str | None = None
    adjacent_parent_shard_id: str | None = None
    starting_hash_key: int = 0
    ending_hash_key: int = MAX_HASH_KEY
    starting_sequence_number: str = "0"
    ending_sequence_number: str | None = None

    @property
    def closed(self) -> bool:
        return self.ending_sequence_number is not None

    @property
    def parent_ids(self) -> tuple[str, ...]:
        return tuple(p for p in (self.parent_shard_id, self.adjacent_parent_shard_id) if p)

    @classmethod
    def from_api(cls, item: Mapping[str, Any]) -> Shard:
        """Build from one element of ListShards' ``Shards``."""
        hash_range = item.get("HashKeyRange", {})
        seq_range = item.get("SequenceNumberRange", {})
        return cls(
            shard_id=item["ShardId"],
            parent_shard_id=item.get("ParentShardId"),
            adjacent_parent_shard_id=item.get("AdjacentParentShardId"),
            starting_hash_key=int(hash_range.get("StartingHashKey", 0)),
            ending_hash_key=int(hash_range.get("EndingHashKey", MAX_HASH_KEY)),
            starting_sequence_number=seq_range.get("StartingSequenceNumber", "0"),
            ending_sequence_number=seq_range.get("EndingSequenceNumber"),
        )


@dataclass(frozen=True)
class Record:
    """One user record. KPL-aggregated records become one Record per sub-record.

    ``(shard_id, sequence_number, sub_sequence_number)`` is unique. ``sub_sequence_number`` is 0
    for records that were not aggregated.
    """

    shard_id: str
    sequence_number: str
    sub_sequence_number: int
    partition_key: str
    data: bytes
    approximate_arrival_timestamp: datetime
    explicit_hash_key: str | None = None

    @property
    def position(self) -> tuple[int, int]:
        """Where this record sits in its shard, comparable across records."""
        return (int(self.sequence_number), self.sub_sequence_number)
