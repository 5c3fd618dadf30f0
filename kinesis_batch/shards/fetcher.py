"""One shard's GetRecords pages: the only code of a read that calls Kinesis.

Contract (:class:`PageFetcher`, one per shard read):
- ``first_iterator()`` is the iterator of the read's start; ``fetch(iterator)`` returns one
  page (its ``NextShardIterator`` leads on). One call at a time: the reader fetches at most one
  page ahead, never two at once.
- Paces its calls under the per-shard limits: a call starts no sooner than the last one's pause
  (``ReadLimits.pause_after`` its response size). A throttled or expired call counts too.
- Retries throttling and endpoint failures with bounded backoff, then raises ThrottledError or
  DependencyError; any other error is raised at once, translated (a missing stream or shard:
  StreamNotFoundError).
- Replaces an expired iterator (at most three times in a row) with one after the last record
  of the pages fetched so far, or at the read's start when nothing was fetched; a LATEST start
  resumes at the time its first iterator was taken, so nothing that arrived since is skipped.
- Returns each page as a :class:`~kinesis_batch.shards.page.Page`, parsed the way ``reader``
  says (kinesis_batch.shards.page: ``fast`` or ``botocore``; by default as
  ``KINESIS_BATCH_READER`` asks, read when the fetcher is made).
- With ``page_bytes``, asks for about that many bytes a page, at the average record size so
  far (1 KiB before the first page), never more than the limits' ``records_per_call``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from kinesis_batch._backoff import Backoff
from kinesis_batch.aws import Handler, aws_call
from kinesis_batch.errors import DependencyError, KinesisBatchError, StreamNotFoundError, ThrottledError
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.model import stream_argument
from kinesis_batch.shards.page import Page, chosen, parse_pages
from kinesis_batch.shards.positions import StartKind, StartPosition

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient

RENEWALS_IN_A_ROW = 3  # an iterator that keeps expiring at once is not an expiry but a fault


class PageFetcher:
    def __init__(
        self,
        client: KinesisClient,
        stream_name: str,
        shard_id: str,
        start: StartPosition,
        *,
        limits: ReadLimits,
        backoff: Backoff,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        page_bytes: int | None = None,
        reader: str | None = None,
    ) -> None:
        self._client = client
        parse_pages(client, reader or chosen())
        self._stream = stream_name
        self._shard_id = shard_id
        self._start = start
        self._limits = limits
        self._backoff = backoff
        self._clock = clock
        self._sleep = sleep
        self._page_bytes = page_bytes
        self._next_call_at = 0.0
        self._fetched_through: str | None = None  # the last raw record of the pages fetched
        self._fetched = (0, 0)  # raw records and their bytes, over every page: the average record size
        self._latest_taken_at: datetime | None = None
        self.get_records_calls = 0
        self.throttled_calls = 0
        self.iterator_renewals = 0

    def first_iterator(self) -> str:
        if self._start.kind is StartKind.LATEST:
            self._latest_taken_at = datetime.now(UTC)
        return self._shard_iterator(self._start.iterator_request())

    def fetch(self, iterator: str) -> Page:
        """One page, read with ``iterator`` or, if that expired, a renewed one."""
        attempt = 0
        renewals_in_a_row = 0
        while True:
            self._pace()
            self.get_records_calls += 1
            started = self._clock()
            self._next_call_at = started + self._limits.pause_after(0)
            try:
                page = Page.from_botocore(
                    self._call("GetRecords", partial(self._get_records, iterator), ExpiredIteratorException=_Expired)
                )
            except _Expired as expired:
                if renewals_in_a_row >= RENEWALS_IN_A_ROW:
                    raise expired.error from expired
                renewals_in_a_row += 1
                self.iterator_renewals += 1
                iterator = self._shard_iterator(self._resume_request())
                continue
            except (ThrottledError, DependencyError) as exc:
                self.throttled_calls += isinstance(exc, ThrottledError)
                attempt = self._retry_or_raise(exc, attempt)
                continue
            size = page.size
            self._fetched = (self._fetched[0] + len(page), self._fetched[1] + size)
            if len(page):
                self._fetched_through = page.records.sequence_numbers[-1]
            self._next_call_at = started + self._limits.pause_after(size)
            return page

    def _get_records(self, iterator: str) -> Any:
        return self._client.get_records(ShardIterator=iterator, Limit=self._records_per_call())

    def _records_per_call(self) -> int:
        most = self._limits.records_per_call
        if self._page_bytes is None:
            return most
        records, size = self._fetched
        average = size / records if records else 1024
        return max(1, min(most, int(self._page_bytes / max(average, 1))))

    def _shard_iterator(self, request: dict[str, Any]) -> str:
        attempt = 0
        while True:
            try:
                response = self._call(
                    "GetShardIterator",
                    lambda: self._client.get_shard_iterator(
                        **stream_argument(self._stream), ShardId=self._shard_id, **request
                    ),
                )
                return str(response["ShardIterator"])
            except (ThrottledError, DependencyError) as exc:
                attempt = self._retry_or_raise(exc, attempt)

    def _resume_request(self) -> dict[str, Any]:
        """Where a renewed iterator starts: after the last raw record fetched, else at the start."""
        if self._fetched_through is None:
            if self._latest_taken_at is not None:
                # A new LATEST iterator would skip what arrived since the first one was taken.
                return {"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": self._latest_taken_at}
            return self._start.iterator_request()
        return {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "StartingSequenceNumber": self._fetched_through}

    def _call(self, operation: str, call: Callable[[], Any], **codes: Handler) -> Any:
        """One Kinesis call of this shard's, its errors translated (kinesis_batch.aws)."""

        def missing(error: KinesisBatchError) -> StreamNotFoundError:
            return StreamNotFoundError(f"{operation}: stream {self._stream!r} or shard {self._shard_id} does not exist")

        where = f"{self._stream}/{self._shard_id}"
        return aws_call(operation, where, call, codes={"ResourceNotFoundException": missing, **codes})

    def _retry_or_raise(self, error: ThrottledError | DependencyError, attempt: int) -> int:
        """Sleep and return the next attempt number, or raise ``error`` once the attempts are spent."""
        attempt += 1
        if attempt >= self._backoff.attempts:
            if isinstance(error, ThrottledError):
                raise ThrottledError(f"{error} (gave up after {attempt} tries)") from error
            raise error
        self._backoff.sleep(attempt, self._sleep)
        return attempt

    def _pace(self) -> None:
        wait = self._next_call_at - self._clock()
        if wait > 0:
            self._sleep(wait)


class _Expired(Exception):
    """The shard iterator expired: renew it (a few times in a row at most)."""

    def __init__(self, error: KinesisBatchError) -> None:
        super().__init__(str(error))
        self.error = error


__all__ = ["PageFetcher"]
