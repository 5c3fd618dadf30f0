"""What a record is as a change, and the one rule that orders a key's changes.

The order of a change is ``(position, lineage_depth, sequence number, sub-sequence number)``:
``position`` is the source's own (DynamoDB's creation time, DMS's commit time and transaction,
a Debezium connector's log position, ``--sequence-by``'s value), a tuple of integers compared
element by element; the Kinesis part breaks its ties (and is the whole order without one).
Sequence numbers are compared as integers, never as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

UPSERT, DELETE = "upsert", "delete"

#: The order of a change, as :func:`order` builds it.
Order = tuple[tuple[int, ...], int, int, int]


@dataclass(frozen=True)
class Unwrapped:
    """A record read through its envelope: ``op`` (UPSERT or DELETE), the row's ``image`` (for a
    delete, at least the key), ``position`` in the source's order (None: Kinesis order only),
    ``key`` names when the record says them (DynamoDB's ``Keys``), and whether the source
    deleted it by itself (a DynamoDB time-to-live expiry)."""

    op: str
    image: dict[str, Any]
    position: tuple[int, ...] | None
    key: tuple[str, ...] = ()
    expired: bool = False


@dataclass(frozen=True)
class Skipped:
    """A record that is not a change of a row (a DMS control record): counted, not a dead letter."""

    kind: str


class EnvelopeError(ValueError):
    """A record that cannot be read as a change: ``kind`` short and stable, ``detail`` which field."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


@dataclass(frozen=True)
class Refused:
    """A record (``position`` in its page) that the changes stage cannot take, and why."""

    position: int
    kind: str
    detail: str


def to_datetime(value: Any) -> datetime | None:
    """ISO 8601 text (no zone: UTC) or a datetime, as an aware datetime; None if neither."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def order(position: Sequence[int] | None, depth: int, sequence_number: str, sub_sequence_number: int) -> Order:
    """The sort key of a change (see the module's rule)."""
    return (tuple(position or ()), int(depth), int(sequence_number), int(sub_sequence_number or 0))


__all__ = ["DELETE", "UPSERT", "EnvelopeError", "Order", "Refused", "Skipped", "Unwrapped", "order", "to_datetime"]
