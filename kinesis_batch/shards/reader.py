"""Read one shard from a start position to an end bound, a page at a time: the bounded loop.

Contract:
- Yields user records (KPL aggregates de-aggregated) in shard order, each at most once, never
  one at or below the start checkpoint, never one past the end bound: as objects
  (iterating), or a page's at a time as columns (:meth:`ShardReader.chunks`).
- Holds at most two GetRecords pages at a time (the one being consumed and, with ``prefetch``,
  the next one, fetched meanwhile), so memory does not grow with the backlog. With
  ``page_bytes``, each page asks for about that many bytes of records, so that a task reading
  many shards at once bounds its memory too.
- Ends at the first of: the end bound; the tip of an open shard; the end of a closed shard,
  however AWS or an emulator says it (:mod:`kinesis_batch.shards.shard_end`).
- Resuming after a checkpoint, notices when retention trimmed past it (the checkpoint's own
  record is gone): raises TrimmedDataError, or with ``allow_gaps`` records it in
  ``trimmed_after`` and goes on.
- Pacing, retries and expired iterators are the page fetcher's
  (:mod:`kinesis_batch.shards.fetcher`), the only code of a read that calls Kinesis.

The reader's attributes (``last_sequence_number``, ``records``, ``reached_shard_end``...) say at
any moment what was read; ``reader.result()`` freezes them in a :class:`ReadResult`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kinesis_batch._ahead import Ahead
from kinesis_batch._backoff import Backoff
from kinesis_batch.errors import TrimmedDataError
from kinesis_batch.shards import shard_end
from kinesis_batch.shards.chunk import Chunk, unpack
from kinesis_batch.shards.fetcher import PageFetcher
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.model import Record, Shard
from kinesis_batch.shards.page import Page, arrival
from kinesis_batch.shards.positions import EndBound, StartPosition

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient


@dataclass(frozen=True)
class ReadResult:
    """What one read did: the checkpoint it reached and how it got there."""

    shard_id: str
    last_sequence_number: str | None
    last_sub_sequence_number: int | None
    records: int
    bytes: int
    reached_shard_end: bool
    millis_behind_latest: int | None
    get_records_calls: int
    throttled_calls: int
    iterator_renewals: int
    # Set when the checkpoint's own record was no longer there: retention trimmed past it.
    trimmed_after: str | None = None
    first_millis_behind_latest: int | None = None  # the backlog's age when the read began
    # The lag when the read began: how old its first record was then (None: nothing to read).
    # Measured from arrival times, as the status' lag is (kinesalite's MillisBehindLatest is 0).
    lag_at_start_ms: int | None = None


class ShardReader:
    """Iterate to read; see the module docstring for the contract."""

    def __init__(
        self,
        client: KinesisClient,
        stream_name: str,
        shard: Shard,
        start: StartPosition,
        end: EndBound = EndBound(),
        *,
        limits: ReadLimits = ReadLimits(),
        backoff: Backoff = Backoff(base=0.25, cap=5.0, attempts=12),
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        allow_gaps: bool = False,
        prefetch: bool = True,
        page_bytes: int | None = None,
        reader: str | None = None,
    ) -> None:
        self._fetcher = PageFetcher(
            client,
            stream_name,
            shard.shard_id,
            start,
            limits=limits,
            backoff=backoff,
            clock=clock,
            sleep=sleep,
            page_bytes=page_bytes,
            reader=reader,
        )
        self._shard = shard
        self._shard_id = shard.shard_id
        self._start = start
        self._end = end
        self._allow_gaps = allow_gaps
        self._prefetch = prefetch
        self._last_raw_sequence: str | None = None  # the last raw record consumed
        self.last_sequence_number: str | None = None
        self.last_sub_sequence_number: int | None = None
        self.records = 0
        self.bytes = 0
        self.reached_shard_end = False
        self.millis_behind_latest: int | None = None
        self.trimmed_after: str | None = None
        self.first_millis_behind_latest: int | None = None
        self.lag_at_start_ms: int | None = None
        self._began_at = datetime.now(UTC)

    @property
    def get_records_calls(self) -> int:
        return self._fetcher.get_records_calls

    @property
    def throttled_calls(self) -> int:
        return self._fetcher.throttled_calls

    @property
    def iterator_renewals(self) -> int:
        return self._fetcher.iterator_renewals

    def result(self) -> ReadResult:
        return ReadResult(
            shard_id=self._shard_id,
            last_sequence_number=self.last_sequence_number,
            last_sub_sequence_number=self.last_sub_sequence_number,
            records=self.records,
            bytes=self.bytes,
            reached_shard_end=self.reached_shard_end,
            millis_behind_latest=self.millis_behind_latest,
            get_records_calls=self.get_records_calls,
            throttled_calls=self.throttled_calls,
            iterator_renewals=self.iterator_renewals,
            trimmed_after=self.trimmed_after,
            first_millis_behind_latest=self.first_millis_behind_latest,
            lag_at_start_ms=self.lag_at_start_ms,
        )

    def __iter__(self) -> Iterator[Record]:
        """The records, one object each (:meth:`chunks` hands on columns instead), each counted
        as it is handed on."""
        for chunk in self._chunks():
            for record in chunk.records():
                self._counted(record.sequence_number, record.sub_sequence_number, 1, len(record.data), chunk)
                yield record

    def chunks(self) -> Iterator[Chunk]:
        """The records, a page's at a time as columns (never an empty chunk), each chunk
        counted as it is handed on."""
        for chunk in self._chunks():
            self._count(chunk)
            yield chunk

    def _chunks(self) -> Iterator[Chunk]:
        skip_through = self._start.skip_through()
        self._began_at = datetime.now(UTC)
        fetch = self._fetcher.fetch
        pending = Ahead(fetch, self._fetcher.first_iterator(), ahead=False)
        empty_tip_pages = 0
        while True:
            page: Page = pending.result()
            self.millis_behind_latest = page.millis_behind_latest
            if self.first_millis_behind_latest is None:
                self.first_millis_behind_latest = self.millis_behind_latest
            # Decide from the page alone whether another follows, and fetch it while this one is
            # consumed: the endpoint works on the next page while we work on this one.
            verdict = shard_end.judge(
                shard_end.Page.of(page), closed=self._shard.closed, empty_tip_pages_before=empty_tip_pages
            )
            empty_tip_pages = verdict.empty_tip_pages
            # The end bound falls inside this page: nothing from its first record past it is wanted.
            stop = self._bound(page)
            if not (verdict.last_page or stop < len(page)):
                pending = Ahead(fetch, page.next_shard_iterator, ahead=self._prefetch)
            if len(page) and skip_through is not None and self._last_raw_sequence is None:
                self._check_not_trimmed(page.records.sequence_numbers[0])
            chunk = unpack(self._shard_id, page.records[:stop])
            if skip_through is not None:
                chunk = chunk.after(skip_through)
                skip_through = None if len(chunk) else skip_through  # past it: no more to compare
            if stop:
                self._last_raw_sequence = page.records.sequence_numbers[stop - 1]
            if len(chunk):
                yield chunk
            if stop < len(page):
                return
            if verdict.drained:
                self.reached_shard_end = True
                return
            if verdict.at_tip:
                return  # an open shard's tip: nothing more for now

    def _bound(self, page: Page) -> int:
        """How many of ``page``'s records come before the end bound (all, mostly: only the last
        record is compared unless it is past the bound)."""
        n, numbers, arrivals = len(page), page.records.sequence_numbers, page.records.arrivals_ms
        if not n or not self._end.excludes(numbers[-1], arrival(arrivals[-1])):
            return n
        for index, (sequence, ms) in enumerate(zip(numbers, arrivals, strict=True)):
            if self._end.excludes(sequence, arrival(ms)):
                return index
        return n  # unreachable: the last one is past it

    def _count(self, chunk: Chunk) -> None:
        self._counted(chunk.sequence_numbers[-1], chunk.sub_sequence_numbers[-1], len(chunk), chunk.size, chunk)

    def _counted(self, last: str, last_sub: int, records: int, size: int, chunk: Chunk) -> None:
        """``records`` more handed on (``size`` bytes of data, through ``last``/``last_sub``),
        from ``chunk`` (whose first record is the read's first when it is the first counted)."""
        if self.lag_at_start_ms is None:
            age = self._began_at - arrival(chunk.arrivals_ms[0])
            self.lag_at_start_ms = max(0, int(age.total_seconds() * 1000))  # clocks differ
        self.last_sequence_number, self.last_sub_sequence_number = last, last_sub
        self.records += records
        self.bytes += size

    def _check_not_trimmed(self, first_sequence_number: str) -> None:
        """A resume starts AT the checkpoint's record, so it must come first; if a later record
        comes first, retention trimmed past the checkpoint and records may be lost."""
        checkpoint = self._start.sequence_number
        assert checkpoint is not None
        if int(first_sequence_number) > int(checkpoint):
            self.trimmed_after = checkpoint
            if not self._allow_gaps:
                raise TrimmedDataError(
                    f"shard {self._shard_id}: the checkpoint's record {checkpoint} is gone (retention trimmed "
                    f"past it; the first record left is {first_sequence_number}): records may have been lost"
                )


__all__ = ["ReadResult", "ShardReader"]
