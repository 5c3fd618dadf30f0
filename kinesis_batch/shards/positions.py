"""Where a bounded read starts and where it ends (values, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.shards.model import sequence_key


class StartKind(Enum):
    TRIM_HORIZON = "TRIM_HORIZON"
    LATEST = "LATEST"
    AT_TIMESTAMP = "AT_TIMESTAMP"
    AFTER = "AFTER"  # after a checkpoint (sequence number, sub-sequence number)


@dataclass(frozen=True)
class StartPosition:
    """The first record a read may return is the one just after this position."""

    kind: StartKind
    sequence_number: str | None = None
    sub_sequence_number: int = 0
    timestamp: datetime | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, StartKind):
            raise IllegalArgumentError(f"not a start position kind: {self.kind!r}")
        if self.kind is not StartKind.AFTER and (self.sequence_number is not None or self.sub_sequence_number != 0):
            raise IllegalArgumentError(f"a {self.kind.value} start takes no sequence number")
        if self.kind is not StartKind.AT_TIMESTAMP and self.timestamp is not None:
            raise IllegalArgumentError(f"a {self.kind.value} start takes no timestamp")
        if self.kind is StartKind.AFTER:
            if self.sequence_number is None:
                raise IllegalArgumentError("a start AFTER a checkpoint needs its sequence number")
            sequence_key(self.sequence_number)
            sub = self.sub_sequence_number
            if not isinstance(sub, int) or isinstance(sub, bool) or sub < 0:
                raise IllegalArgumentError(f"not a sub-sequence number: {sub!r} (expected an integer >= 0)")
        if self.kind is StartKind.AT_TIMESTAMP and (self.timestamp is None or self.timestamp.tzinfo is None):
            raise IllegalArgumentError("AT_TIMESTAMP needs a time zone aware timestamp")

    @classmethod
    def trim_horizon(cls) -> StartPosition:
        return cls(StartKind.TRIM_HORIZON)

    @classmethod
    def latest(cls) -> StartPosition:
        return cls(StartKind.LATEST)

    @classmethod
    def at_timestamp(cls, timestamp: datetime) -> StartPosition:
        return cls(StartKind.AT_TIMESTAMP, timestamp=timestamp)

    @classmethod
    def after(cls, sequence_number: str, sub_sequence_number: int = 0) -> StartPosition:
        """After the user record ``(sequence_number, sub_sequence_number)``, which was processed."""
        return cls(StartKind.AFTER, sequence_number, sub_sequence_number)

    def iterator_request(self) -> dict[str, Any]:
        """The GetShardIterator arguments for this position (without stream and shard).

        A checkpoint is resumed AT its sequence number and the reader skips sub-records at or
        below it: an aggregated record may have been only partly processed.
        """
        if self.kind is StartKind.AFTER:
            return {"ShardIteratorType": "AT_SEQUENCE_NUMBER", "StartingSequenceNumber": self.sequence_number}
        if self.kind is StartKind.AT_TIMESTAMP:
            return {"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": self.timestamp}
        return {"ShardIteratorType": self.kind.value}

    def skip_through(self) -> tuple[int, int] | None:
        """Records at or below this position were already processed."""
        if self.kind is StartKind.AFTER:
            assert self.sequence_number is not None
            return (int(self.sequence_number), self.sub_sequence_number)
        return None


@dataclass(frozen=True)
class EndBound:
    """Where a read stops, besides the tip of an open shard and the end of a closed one.

    ``sequence_number``: no record above it is read (inclusive bound).
    ``until``: no record that arrived after it is read. A read of an open shard that is written
    faster than it can be read only ends at such a bound: planning always gives one.
    """

    sequence_number: str | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        if self.sequence_number is not None:
            sequence_key(self.sequence_number)
        if self.until is not None and self.until.tzinfo is None:
            raise IllegalArgumentError("an end time must be time zone aware")

    def excludes(self, sequence_number: str, arrival: datetime) -> bool:
        """True for the first record past the bound: the read stops before it."""
        if self.sequence_number is not None and int(sequence_number) > int(self.sequence_number):
            return True
        return self.until is not None and arrival > self.until
