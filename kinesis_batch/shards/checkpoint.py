"""Checkpoint values: a user record's position, or a sentinel (as the KCL writes them).

Order (what "never backwards" means): the start sentinels TRIM_HORIZON, AT_TIMESTAMP and
LATEST come before every sequence number; sequence numbers compare as (integer, sub-sequence);
SHARD_END comes after everything. The start sentinels are not ordered among themselves, so a
checkpoint never moves from one start position to another (TRIM_HORIZON to LATEST would skip
the backlog, a later AT_TIMESTAMP to an earlier one would read data again): it stays, or it
moves to a record or to SHARD_END.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from kinesis_batch.errors import CheckpointOrderError, IllegalArgumentError
from kinesis_batch.shards.model import MAX_SEQUENCE_NUMBER, sequence_key
from kinesis_batch.shards.positions import StartPosition


class Sentinel(Enum):
    TRIM_HORIZON = "TRIM_HORIZON"
    LATEST = "LATEST"
    AT_TIMESTAMP = "AT_TIMESTAMP"
    SHARD_END = "SHARD_END"


_START_SENTINELS = frozenset({Sentinel.TRIM_HORIZON, Sentinel.LATEST, Sentinel.AT_TIMESTAMP})
_BEFORE_ALL = -1
_AFTER_ALL = MAX_SEQUENCE_NUMBER + 1


@dataclass(frozen=True)
class Checkpoint:
    """``value`` is a decimal sequence number or a :class:`Sentinel` name.

    ``sub_sequence_number`` is the last processed sub-record of an aggregated record (0 for
    plain records). ``timestamp`` goes with AT_TIMESTAMP only.
    """

    value: str
    sub_sequence_number: int = 0
    timestamp: datetime | None = None

    def __post_init__(self) -> None:
        if self.value not in Sentinel.__members__:
            sequence_key(self.value)
        if self.sub_sequence_number < 0:
            raise IllegalArgumentError(f"negative sub-sequence number {self.sub_sequence_number}")
        if (self.value == Sentinel.AT_TIMESTAMP.value) != (self.timestamp is not None):
            raise IllegalArgumentError("a timestamp goes with the AT_TIMESTAMP checkpoint, and only with it")
        if self.timestamp is not None and self.timestamp.tzinfo is None:
            raise IllegalArgumentError("an AT_TIMESTAMP checkpoint needs a time zone aware timestamp")

    @classmethod
    def at(cls, sequence_number: str, sub_sequence_number: int = 0) -> Checkpoint:
        return cls(sequence_number, sub_sequence_number)

    @classmethod
    def trim_horizon(cls) -> Checkpoint:
        return cls(Sentinel.TRIM_HORIZON.value)

    @classmethod
    def latest(cls) -> Checkpoint:
        return cls(Sentinel.LATEST.value)

    @classmethod
    def at_timestamp(cls, timestamp: datetime) -> Checkpoint:
        return cls(Sentinel.AT_TIMESTAMP.value, timestamp=timestamp)

    @classmethod
    def shard_end(cls) -> Checkpoint:
        return cls(Sentinel.SHARD_END.value)

    @property
    def sentinel(self) -> Sentinel | None:
        return Sentinel.__members__.get(self.value)

    @property
    def is_start(self) -> bool:
        """A start sentinel (TRIM_HORIZON, LATEST, AT_TIMESTAMP): nothing of the shard processed yet."""
        return self.sentinel in _START_SENTINELS

    @property
    def is_shard_end(self) -> bool:
        return self.value == Sentinel.SHARD_END.value

    def order_key(self) -> tuple[int, int]:
        if self.is_shard_end:
            return (_AFTER_ALL, 0)
        if self.sentinel is not None:
            return (_BEFORE_ALL, 0)
        return (int(self.value), self.sub_sequence_number)

    def start_position(self) -> StartPosition | None:
        """Where a read resumes from this checkpoint; ``None`` once the shard is finished."""
        sentinel = self.sentinel
        if sentinel is Sentinel.SHARD_END:
            return None
        if sentinel is Sentinel.TRIM_HORIZON:
            return StartPosition.trim_horizon()
        if sentinel is Sentinel.LATEST:
            return StartPosition.latest()
        if sentinel is Sentinel.AT_TIMESTAMP:
            assert self.timestamp is not None
            return StartPosition.at_timestamp(self.timestamp)
        return StartPosition.after(self.value, self.sub_sequence_number)

    def to_json(self) -> dict[str, Any]:
        """The checkpoint as JSON values (commit records, plan manifests, Spark task specs)."""
        return {
            "value": self.value,
            "sub_sequence_number": self.sub_sequence_number,
            "timestamp": self.timestamp.isoformat() if self.timestamp else None,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Checkpoint:
        timestamp = body.get("timestamp")
        return cls(
            body["value"], int(body["sub_sequence_number"]), datetime.fromisoformat(timestamp) if timestamp else None
        )

    def __str__(self) -> str:
        if self.sentinel is Sentinel.AT_TIMESTAMP:
            assert self.timestamp is not None
            return f"AT_TIMESTAMP({self.timestamp.isoformat()})"
        if self.sentinel is None and self.sub_sequence_number:
            return f"{self.value}.{self.sub_sequence_number}"
        return self.value


def validate_move(current: Checkpoint, new: Checkpoint, *, read_through: Checkpoint | None = None) -> None:
    """Raise unless moving ``current`` to ``new`` goes forward and stays within what was read.

    ``read_through`` is the last record the caller read (SHARD_END if it read the whole shard);
    ``None`` skips that check. Staying in place is allowed: commits are idempotent.
    Moving from one start position to a different one is not a move forward (see the module).
    """
    if new.order_key() < current.order_key():
        raise CheckpointOrderError(f"checkpoint would move backwards, from {current} to {new}")
    if new.is_start and new != current:
        raise CheckpointOrderError(
            f"checkpoint would move from start position {current} to start position {new}: "
            "a checkpoint moves to a record or to SHARD_END"
        )
    if read_through is not None and new.order_key() > read_through.order_key():
        raise CheckpointOrderError(f"checkpoint {new} is beyond the last record read, {read_through}")
