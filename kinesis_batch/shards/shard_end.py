"""Whether a shard's read is over, judged from each GetRecords page alone (pure: no I/O).

AWS and the emulators end a shard in different ways, and a reader must stop on every one of
them without stopping early on AWS:

======================  ==========================================================  ===========
who                     what the page looks like                                    verdict
======================  ==========================================================  ===========
AWS, kinesis-local      a closed shard's last page: no NextShardIterator (with      drained
                        ChildShards), with or without records
kinesalite              a closed shard's end: one more, empty page without          drained
                        NextShardIterator
moto                    a closed shard never ends its chain: empty pages at the     drained after
                        tip, each with a NextShardIterator                          3 in a row
AWS                     an open shard's tip: an empty page, MillisBehindLatest 0    at the tip
AWS                     a sparse stretch of a shard: an empty page with             go on
                        MillisBehindLatest above 0
AWS                     a closed shard's empty page at "the tip" with a             go on (one
                        NextShardIterator: a sparse stretch, not the end            is not 3)
======================  ==========================================================  ===========

Whether a shard is closed comes from the listing (an EndingSequenceNumber), or from
ChildShards in the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kinesis_batch.shards import page as fetched

#: Empty pages at the tip of a closed shard, in a row, that end it (moto never ends one). Not
#: one: on AWS an empty page may come from a sparse stretch of the shard.
CLOSED_SHARD_EMPTY_TIP_PAGES = 3


@dataclass(frozen=True)
class Page:
    """What the rules need of one GetRecords response."""

    records: int
    next_iterator: bool
    millis_behind_latest: int | None
    child_shards: bool = False

    @classmethod
    def of(cls, page: fetched.Page) -> Page:
        """From a fetched page (kinesis_batch.shards.page)."""
        return cls(
            records=len(page),
            next_iterator=bool(page.next_shard_iterator),
            millis_behind_latest=page.millis_behind_latest,
            child_shards=bool(page.child_shards),
        )


@dataclass(frozen=True)
class Verdict:
    """What one page says. ``drained`` (the shard's end: SHARD_END) comes before ``at_tip``
    (an open shard's tip: nothing more for now); neither means another page follows."""

    empty_tip_pages: int  # empty pages at the tip in a row, this one included
    at_tip: bool
    drained: bool

    @property
    def last_page(self) -> bool:
        return self.drained or self.at_tip


def judge(page: Page, *, closed: bool, empty_tip_pages_before: int = 0) -> Verdict:
    """The verdict on ``page`` of a shard the listing says is ``closed`` (or not), after
    ``empty_tip_pages_before`` empty tip pages in a row (the previous verdict's count)."""
    empty_at_tip = (page.millis_behind_latest or 0) == 0 and not page.records
    empty = empty_tip_pages_before + 1 if empty_at_tip else 0
    return Verdict(
        empty_tip_pages=empty,
        at_tip=bool(empty) and not (closed or page.child_shards),
        drained=not page.next_iterator or empty >= CLOSED_SHARD_EMPTY_TIP_PAGES,
    )


__all__ = ["CLOSED_SHARD_EMPTY_TIP_PAGES", "Page", "Verdict", "judge"]
