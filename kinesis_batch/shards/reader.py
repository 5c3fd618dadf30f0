"""Read one shard from a start position to an end bound, a page at a time.

Contract:
- Yields user records (KPL aggregates de-aggregated) in shard order, each at most once, never
  one at or below the start checkpoint, never one past the end bound.
- Holds at most two GetRecords pages at a time (the one being consumed and, with ``prefetch``,
  the next one, fetched meanwhile), so memory does not grow with the backlog. With
  ``page_bytes``, each page asks for about that many bytes of records (at the average record
  size read so far), so that a task reading many shards at once bounds its memory too.
- Ends at the first of: the end bound; the tip of an open shard (an empty page with
  MillisBehindLatest == 0); the end of a closed shard (a page without NextShardIterator: AWS
  and kinesis-local send it with the last records, kinesalite as one more, empty page; or an
  few empty pages in a row at the tip of a shard known to be closed, which is how moto ends
  one: it never stops handing out iterators for a closed shard). Whether a shard is closed comes from the
  listing the caller passes in, or from ChildShards in the page.
- Resuming after a checkpoint, notices when retention trimmed past it (the checkpoint's own
  record is gone): raises TrimmedDataError, or with ``allow_gaps`` records it in
  ``trimmed_after`` and goes on.
- Paces its own GetRecords calls under the per-shard limits (5 calls/s and 2 MiB/s by
  default), retries throttling with bounded backoff (then raises ThrottledError), and
  replaces an expired iterator with one after the last record read.

The reader's attributes (``last_sequence_number``, ``records``, ``reached_shard_end``...) say at
any moment what was read; ``reader.result()`` freezes them in a :class:`ReadResult`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from kinesis_batch._backoff import Backoff
from kinesis_batch.errors import (
    DependencyError,
    IllegalArgumentError,
    StreamNotFoundError,
    ThrottledError,
    TrimmedDataError,
    error_code,
    from_botocore,
    is_throttling,
)
from kinesis_batch.shards.deaggregation import user_records
from kinesis_batch.shards.model import Record, Shard
from kinesis_batch.shards.positions import EndBound, StartKind, StartPosition

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient

MIB = 1024 * 1024
MAX_RECORDS_PER_CALL = 10_000
CLOSED_SHARD_EMPTY_TIP_PAGES = 3


@dataclass(frozen=True)
class ReadLimits:
    """The pace one reader keeps on one shard (Kinesis: 5 calls/s and 2 MiB/s per shard,
    shared by every polling consumer of the stream). ``None`` switches a limit off."""

    calls_per_second: float | None = 5.0
    bytes_per_second: float | None = 2 * MIB
    records_per_call: int = MAX_RECORDS_PER_CALL

    def __post_init__(self) -> None:
        for name in ("calls_per_second", "bytes_per_second"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise IllegalArgumentError(f"{name} must be a positive number or None (no limit), not {value!r}")
        records = self.records_per_call
        if isinstance(records, bool) or not isinstance(records, int) or not 1 <= records <= MAX_RECORDS_PER_CALL:
            raise IllegalArgumentError(f"records_per_call must be 1..{MAX_RECORDS_PER_CALL}, not {records!r}")

    @classmethod
    def unlimited(cls) -> ReadLimits:
        """For emulators, which have no limits to respect."""
        return cls(calls_per_second=None, bytes_per_second=None)

    @classmethod
    def parse(cls, text: str) -> ReadLimits:
        """``--read-limits``: ``kinesis`` (AWS's per-shard limits), ``none``, or
        ``CALLS,BYTES``: calls and bytes per second per shard, e.g. to leave half of each shard
        to another consumer (``2.5,1048576``)."""
        if text == "kinesis":
            return cls()
        if text == "none":
            return cls.unlimited()
        calls, _, size = text.partition(",")
        try:
            return cls(calls_per_second=float(calls), bytes_per_second=float(size))
        except ValueError:
            raise IllegalArgumentError(
                f"--read-limits {text!r}: use kinesis, none, or CALLS,BYTES per second per shard (e.g. 5,2097152)"
            ) from None

    def to_arg(self) -> str:
        """The ``--read-limits`` value that parses back to these limits (per-call records aside)."""
        if self == ReadLimits():
            return "kinesis"
        if self.calls_per_second is None and self.bytes_per_second is None:
            return "none"
        return f"{self.calls_per_second:g},{self.bytes_per_second:g}"

    def pause_after(self, response_bytes: int) -> float:
        """Seconds between the start of one call and the next, given the last response size."""
        pause = 0.0
        if self.calls_per_second:
            pause = 1.0 / self.calls_per_second
        if self.bytes_per_second:
            pause = max(pause, response_bytes / self.bytes_per_second)
        return pause


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
    ) -> None:
        self._client = client
        self._stream = stream_name
        self._shard = shard
        self._shard_id = shard.shard_id
        self._start = start
        self._end = end
        self._limits = limits
        self._backoff = backoff
        self._clock = clock
        self._sleep = sleep
        self._allow_gaps = allow_gaps
        self._next_call_at = 0.0
        self._last_raw_sequence: str | None = None  # the last raw record consumed
        self._fetched_through: str | None = None  # the last raw record of the pages fetched
        self._prefetch = prefetch
        self._page_bytes = page_bytes
        self._fetched = (0, 0)  # raw records and their bytes, over every page: the average record size
        self._latest_taken_at: datetime | None = None
        self.last_sequence_number: str | None = None
        self.last_sub_sequence_number: int | None = None
        self.records = 0
        self.bytes = 0
        self.reached_shard_end = False
        self.millis_behind_latest: int | None = None
        self.get_records_calls = 0
        self.throttled_calls = 0
        self.iterator_renewals = 0
        self.trimmed_after: str | None = None
        self.first_millis_behind_latest: int | None = None
        self.lag_at_start_ms: int | None = None
        self._began_at = datetime.now(UTC)

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
        skip_through = self._start.skip_through()
        self._began_at = datetime.now(UTC)
        if self._start.kind is StartKind.LATEST:
            self._latest_taken_at = datetime.now(UTC)
        iterator = self._shard_iterator(self._start.iterator_request())
        empty_tip_pages = 0
        pending = _Call(self._get_records, iterator, ahead=False)
        while True:
            page, iterator = pending.result()
            raw_records = page.get("Records", [])
            if self.first_millis_behind_latest is None:
                self.first_millis_behind_latest = page.get("MillisBehindLatest")
            next_iterator = page.get("NextShardIterator")
            millis = page.get("MillisBehindLatest")
            self.millis_behind_latest = millis
            # Decide from the page alone whether another follows, and fetch it while this one is
            # consumed: the endpoint works on the next page while we work on this one.
            empty_tip_pages = empty_tip_pages + 1 if (millis or 0) == 0 and not raw_records else 0
            at_tip = bool(empty_tip_pages) and not (self._shard.closed or page.get("ChildShards"))
            # A closed shard that never stops handing out iterators (moto) is drained. Not after
            # one empty page: on AWS one may come from a sparse stretch of the shard.
            drained = not next_iterator or empty_tip_pages >= CLOSED_SHARD_EMPTY_TIP_PAGES
            bounded = False  # the end bound falls inside this page: nothing after it is wanted
            if raw_records:
                last = raw_records[-1]
                self._fetched_through = last["SequenceNumber"]
                bounded = self._end.excludes(last["SequenceNumber"], last["ApproximateArrivalTimestamp"])
            if not (at_tip or drained or bounded):
                pending = _Call(self._get_records, next_iterator, ahead=self._prefetch)
            for raw in raw_records:
                sequence_number = raw["SequenceNumber"]
                if skip_through is not None and self._last_raw_sequence is None:
                    self._check_not_trimmed(sequence_number)
                arrival = raw["ApproximateArrivalTimestamp"]
                if self._end.excludes(sequence_number, arrival):
                    return
                for record in user_records(
                    self._shard_id,
                    sequence_number,
                    raw["PartitionKey"],
                    raw["Data"],
                    arrival,
                    raw.get("ExplicitHashKey"),
                ):
                    if skip_through is not None and record.position <= skip_through:
                        continue
                    if self.lag_at_start_ms is None:
                        age = self._began_at - record.approximate_arrival_timestamp
                        self.lag_at_start_ms = max(0, int(age.total_seconds() * 1000))  # clocks differ
                    self.last_sequence_number = record.sequence_number
                    self.last_sub_sequence_number = record.sub_sequence_number
                    self.records += 1
                    self.bytes += len(record.data)
                    yield record
                self._last_raw_sequence = sequence_number
            if drained:
                self.reached_shard_end = True
                return
            if at_tip:
                return  # an open shard's tip: nothing more for now

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

    # -- calls -------------------------------------------------------------------------------

    def _get_records(self, iterator: str) -> tuple[dict[str, Any], str]:
        """One page; returns it with the iterator it was read with (renewed if it expired)."""
        attempt = 0
        renewals_in_a_row = 0
        while True:
            self._pace()
            self.get_records_calls += 1
            started = self._clock()
            # Every call counts against the shard's limit, also one that is throttled or expired.
            self._next_call_at = started + self._limits.pause_after(0)
            try:
                page: dict[str, Any] = dict(
                    self._client.get_records(ShardIterator=iterator, Limit=self._records_per_call())
                )
            except ClientError as exc:
                code = error_code(exc)
                if code == "ExpiredIteratorException" and renewals_in_a_row < 3:
                    renewals_in_a_row += 1
                    self.iterator_renewals += 1
                    iterator = self._shard_iterator(self._resume_request())
                    continue
                if is_throttling(exc):
                    self.throttled_calls += 1
                attempt = self._retry_or_raise(exc, attempt, "GetRecords")
                continue
            except BotoCoreError as exc:
                attempt = self._retry_or_raise(exc, attempt, "GetRecords")
                continue
            raw_records = page.get("Records", [])
            size = sum(len(r["Data"]) + len(r["PartitionKey"]) for r in raw_records)
            self._fetched = (self._fetched[0] + len(raw_records), self._fetched[1] + size)
            self._next_call_at = started + self._limits.pause_after(size)
            return page, iterator

    def _records_per_call(self) -> int:
        """``page_bytes`` in records of the average size so far (1 KiB before the first page);
        never more than the limits' ``records_per_call``."""
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
                response = self._client.get_shard_iterator(StreamName=self._stream, ShardId=self._shard_id, **request)
                return response["ShardIterator"]
            except (ClientError, BotoCoreError) as exc:
                attempt = self._retry_or_raise(exc, attempt, "GetShardIterator")

    def _resume_request(self) -> dict[str, Any]:
        """Where a renewed iterator starts: after the last raw record fetched, else at the start."""
        if self._fetched_through is None:
            if self._latest_taken_at is not None:
                # A new LATEST iterator would skip what arrived since the first one was taken.
                return {"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": self._latest_taken_at}
            return self._start.iterator_request()
        return {
            "ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
            "StartingSequenceNumber": self._fetched_through,
        }

    def _retry_or_raise(self, exc: Exception, attempt: int, operation: str) -> int:
        """Sleep and return the next attempt number, or raise the translated error."""
        error = from_botocore(exc, operation=operation, resource=f"{self._stream}/{self._shard_id}")
        if error_code(exc) == "ResourceNotFoundException":
            raise StreamNotFoundError(
                f"{operation}: stream {self._stream!r} or shard {self._shard_id} does not exist"
            ) from exc
        attempt += 1
        if not isinstance(error, (ThrottledError, DependencyError)) or attempt >= self._backoff.attempts:
            if isinstance(error, ThrottledError):
                raise ThrottledError(f"{error} (gave up after {attempt} tries)") from exc
            raise error from exc
        self._backoff.sleep(attempt, self._sleep)
        return attempt

    def _pace(self) -> None:
        wait = self._next_call_at - self._clock()
        if wait > 0:
            self._sleep(wait)


class _Call:
    """``call(*args)``: when ``result()`` asks for it, or (``ahead``) at once in a daemon thread.
    ``result()`` returns its value or re-raises what it raised. A daemon thread, so a read
    abandoned mid-way never holds up the interpreter's exit."""

    def __init__(self, call: Callable[..., Any], *args: Any, ahead: bool) -> None:
        self._call, self._args = call, args
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if ahead:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._call(*self._args)
        except BaseException as exc:  # handed to the reader's thread by result()
            self._error = exc
        self._done = True

    def result(self) -> Any:
        if self._thread is not None:
            self._thread.join()
        elif not self._done:
            self._run()
        if self._error is not None:
            raise self._error
        return self._value
