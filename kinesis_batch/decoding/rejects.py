"""Why a record did not become rows: a value each stage returns, never an exception, so the rest
of the page goes on. The record then becomes a dead-letter row (or, with ``--on-bad-record
fail``, the run stops at the first one)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from kinesis_batch.errors import BadRecordError

#: The stages a record goes through, in order; a dead letter names the one that failed.
DECOMPRESS, DECODE, TRANSFORM, ROUTE, SCHEMA = "decompress", "decode", "transform", "route", "schema"
#: A field's value has another type than the page's or the table's (a routed page decodes such
#: records again on their own: kinesis_batch.decoding.pipeline).
TYPE_CHANGED = "type changed"


@dataclass(frozen=True)
class Rejected:
    """Record ``position`` (in its page) failed at ``stage``. ``kind`` is short and stable (the
    counts and alerts group by it), ``detail`` says which field and value."""

    position: int
    stage: str
    kind: str
    detail: str = ""

    @property
    def reason(self) -> str:
        """One line: the kind, then the detail."""
        return f"{self.kind}: {self.detail}" if self.detail else self.kind

    def at(self, position: int) -> Rejected:
        """The same rejection of the record at ``position`` (a stage saw a subset of the page)."""
        return Rejected(position, self.stage, self.kind, self.detail)


def bad_record(shard_id: str, sequence_number: str, sub_sequence_number: int, rejected: Rejected) -> BadRecordError:
    at = f"{sequence_number}" + (f" (sub-sequence {sub_sequence_number})" if sub_sequence_number else "")
    return BadRecordError(
        f"shard {shard_id}, sequence number {at}: {rejected.stage} failed: {rejected.reason} "
        "(--on-bad-record fail; with dead-letter, such records go to the dead-letter output)"
    )


def note(rejected: dict[int, Rejected], rejects: Iterable[Rejected]) -> None:
    """Add ``rejects`` to a page's ``rejected`` records: the first reason a record is rejected
    for is the one it keeps."""
    for reject in rejects:
        rejected.setdefault(reject.position, reject)


def tally(rejects: Iterable[Rejected]) -> Counter[str]:
    """How many rejections of each kind, by ``stage: kind``."""
    return Counter(f"{r.stage}: {r.kind}" for r in rejects)


__all__ = [
    "DECODE",
    "DECOMPRESS",
    "ROUTE",
    "SCHEMA",
    "TRANSFORM",
    "TYPE_CHANGED",
    "Rejected",
    "bad_record",
    "note",
    "tally",
]
