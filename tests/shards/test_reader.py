"""The shard reader on real emulators (kinesalite, kinesis-local), with AWS behaviours the
emulators lack injected around the real client by tests/faults.py; every test on both ways of
parsing a GetRecords page (kinesis_batch.shards.page: the fast one, and botocore's own)."""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from devkit.stack import free_port

from kinesis_batch import aws
from kinesis_batch._backoff import Backoff
from kinesis_batch.errors import (
    DependencyError,
    IllegalArgumentError,
    KinesisBatchError,
    StreamNotFoundError,
    ThrottledError,
    TrimmedDataError,
)
from kinesis_batch.shards.limits import MIB, ReadLimits
from kinesis_batch.shards.listing import list_shards
from kinesis_batch.shards.model import Record, Shard
from kinesis_batch.shards.page import READER_ENV, READERS, RecordColumns
from kinesis_batch.shards.positions import EndBound, StartPosition
from kinesis_batch.shards.reader import ReadResult, ShardReader
from tests.faults import FakeClock, FaultyKinesis, response_bytes
from tests.streams import put, put_kib, split

BOTH = pytest.mark.parametrize("emulator", ["kinesalite", "kinesis-local"], indirect=True)
FAST = ReadLimits.unlimited()
FROM_THE_START = StartPosition.trim_horizon()
NO_WAIT_BACKOFF = Backoff(base=0.5, cap=2.0, attempts=5)


@pytest.fixture(autouse=True, params=READERS)
def reader_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here, on each way of parsing a page (the fast one, and botocore's; botocore's
    on kinesalite only, where a test runs on both emulators: what differs between the emulators
    comes before the parse, and the fast path meets both)."""
    if request.param == "botocore" and request.node.callspec.params.get("emulator") == "kinesis-local":
        pytest.skip("botocore's parse runs on kinesalite; the fast path on both emulators")
    monkeypatch.setenv(READER_ENV, request.param)
    return str(request.param)


def test_each_path_parses_the_page_its_own_way_into_the_same_records(
    kinesis: Any, streams: Any, reader_path: str
) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 5)
    faulty = FaultyKinesis(kinesis, budget=20)
    records, _ = read(faulty, stream, only_shard(kinesis, stream))
    assert data(records) == sent
    parsed = faulty.of("get_records")[0].response
    assert parsed is not None
    assert isinstance(parsed["Records"], RecordColumns if reader_path == "fast" else list)


def only_shard(client: Any, stream: str) -> Shard:
    (shard,) = list_shards(client, stream)
    return shard


def read(
    client: Any,
    stream: str,
    shard: Shard,
    start: StartPosition = FROM_THE_START,
    end: EndBound = EndBound(),
    **options: Any,
) -> tuple[list[Record], ReadResult]:
    options.setdefault("limits", FAST)
    reader = ShardReader(client, stream, shard, start, end, **options)
    records = list(reader)
    return records, reader.result()


def data(records: list[Record]) -> list[str]:
    return [r.data.decode() for r in records]


def assert_strictly_ascending(records: list[Record]) -> None:
    positions = [r.position for r in records]
    assert positions == sorted(positions)
    assert len(set(positions)) == len(positions), "a record was yielded twice"


def _drop_real_page(make: Any) -> Any:
    """An alteration that replaces a real GetRecords response by ``make(params)``."""
    return lambda _n, params, _response: make(params)


# -- reading on both emulators ---------------------------------------------------------------


@BOTH
def test_reads_every_record_exactly_once_in_order_from_trim_horizon(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=2)
    sent = put(kinesis, stream, 60, keys=8)
    faulty = FaultyKinesis(kinesis)
    seen: list[Record] = []
    for shard in list_shards(kinesis, stream):
        records, result = read(faulty, stream, shard, limits=dataclasses.replace(FAST, records_per_call=7))
        assert {r.shard_id for r in records} <= {shard.shard_id}
        assert_strictly_ascending(records)
        assert result.records == len(records)
        assert result.get_records_calls == -(-len(records) // 7) + 1, "full pages, then one empty page at the tip"
        seen += records
    assert Counter(data(seen)) == Counter(sent), "every record once, none missing"
    for key in {r.partition_key for r in seen}:  # per-key order is the order of the puts
        values = [int(v) for v in data([r for r in seen if r.partition_key == key])]
        assert values == sorted(values)
    assert all(c.params["Limit"] == 7 for c in faulty.of("get_records"))


@BOTH
def test_read_result_reports_last_position_count_and_bytes(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 25)
    faulty = FaultyKinesis(kinesis)
    time.sleep(0.3)  # a lag to measure: the records are this much older than the read

    before = datetime.now(UTC)
    records, result = read(faulty, stream, only_shard(kinesis, stream))
    after = datetime.now(UTC)

    assert data(records) == sent
    first_arrival = records[0].approximate_arrival_timestamp
    lag = result.lag_at_start_ms
    assert lag is not None and millis(before - first_arrival) - 1 <= lag <= millis(after - first_arrival) + 1
    assert lag >= 250
    assert dataclasses.replace(result, lag_at_start_ms=None) == ReadResult(
        shard_id="shardId-000000000000",
        last_sequence_number=records[-1].sequence_number,
        last_sub_sequence_number=0,
        records=25,
        bytes=sum(len(s) for s in sent),
        reached_shard_end=False,
        millis_behind_latest=0,
        get_records_calls=faulty.count("get_records"),
        throttled_calls=0,
        iterator_renewals=0,
        trimmed_after=None,
        first_millis_behind_latest=faulty.of("get_records")[0].response["MillisBehindLatest"],
    )


def millis(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1000)


@BOTH
def test_resumes_after_a_checkpoint_without_repeating_or_skipping(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 30)
    shard = only_shard(kinesis, stream)

    first = ShardReader(kinesis, stream, shard, StartPosition.trim_horizon(), limits=FAST)
    head = list(itertools.islice(first, 11))  # the run stops part-way through a page
    checkpoint = first.result()
    assert (checkpoint.records, checkpoint.last_sequence_number) == (11, head[-1].sequence_number)

    start = StartPosition.after(checkpoint.last_sequence_number or "", checkpoint.last_sub_sequence_number or 0)
    tail, result = read(kinesis, stream, shard, start)

    assert data(head) + data(tail) == sent
    assert result.records == 19
    # a checkpoint on the last record leaves nothing to read, and says so
    rest, after_end = read(kinesis, stream, shard, StartPosition.after(tail[-1].sequence_number))
    assert rest == []
    assert (after_end.records, after_end.last_sequence_number, after_end.reached_shard_end) == (0, None, False)


@BOTH
def test_at_timestamp_start_reads_from_that_arrival_time_on(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    before = put(kinesis, stream, 6)
    time.sleep(0.05)  # arrival times have millisecond precision
    after = put(kinesis, stream, 6, start=100)
    shard = only_shard(kinesis, stream)
    everything, _ = read(kinesis, stream, shard)
    first_after = everything[len(before)]
    assert everything[len(before) - 1].approximate_arrival_timestamp < first_after.approximate_arrival_timestamp

    records, _ = read(kinesis, stream, shard, StartPosition.at_timestamp(first_after.approximate_arrival_timestamp))

    assert data(records) == after


@BOTH
def test_latest_start_reads_only_what_arrives_after_the_iterator(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    put(kinesis, stream, 10)
    shard = only_shard(kinesis, stream)

    idle, idle_result = read(FaultyKinesis(kinesis), stream, shard, StartPosition.latest())
    assert idle == [] and idle_result.get_records_calls == 1 and not idle_result.reached_shard_end

    faulty = FaultyKinesis(kinesis)
    late: list[str] = []
    # records put between GetShardIterator(LATEST) and the first GetRecords
    faulty.before("get_records", lambda n, _params: late.extend(put(kinesis, stream, 4, start=500)) if n == 1 else None)
    records, _ = read(faulty, stream, shard, StartPosition.latest())

    assert data(records) == late == ["500", "501", "502", "503"]


@BOTH
def test_end_bound_by_sequence_number_is_inclusive_and_stops_reading(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 30)
    shard = only_shard(kinesis, stream)
    everything, _ = read(kinesis, stream, shard)
    faulty = FaultyKinesis(kinesis)

    records, result = read(
        faulty,
        stream,
        shard,
        end=EndBound(sequence_number=everything[8].sequence_number),
        limits=dataclasses.replace(FAST, records_per_call=5),
    )

    assert data(records) == sent[:9]
    assert result.last_sequence_number == everything[8].sequence_number
    assert not result.reached_shard_end
    assert faulty.count("get_records") == 2, "no page is asked for past the bound"


@BOTH
def test_end_bound_by_arrival_time_stops_before_later_records(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    before = put(kinesis, stream, 8)
    time.sleep(0.05)
    put(kinesis, stream, 8, start=100)
    shard = only_shard(kinesis, stream)
    everything, _ = read(kinesis, stream, shard)
    until = everything[len(before) - 1].approximate_arrival_timestamp

    records, result = read(kinesis, stream, shard, end=EndBound(until=until))

    assert data(records) == before
    assert all(r.approximate_arrival_timestamp <= until for r in records)
    assert not result.reached_shard_end
    # just before the first record's arrival: nothing
    nothing, _ = read(
        kinesis, stream, shard, end=EndBound(until=everything[0].approximate_arrival_timestamp - timedelta(seconds=1))
    )
    assert nothing == []


@BOTH
def test_stops_at_the_tip_of_an_open_shard_without_reaching_shard_end(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 12)
    shard = only_shard(kinesis, stream)
    faulty = FaultyKinesis(kinesis, budget=20)

    records, result = read(faulty, stream, shard)

    assert data(records) == sent
    assert not result.reached_shard_end
    assert result.millis_behind_latest == 0
    last_page = faulty.of("get_records")[-1].response
    assert last_page is not None and not last_page["Records"] and last_page.get("NextShardIterator")
    # the shard is still open: what arrives later is read by the next run
    later = put(kinesis, stream, 3, start=100)
    more, _ = read(kinesis, stream, shard, StartPosition.after(result.last_sequence_number or ""))
    assert data(more) == later


@BOTH
def test_reaches_shard_end_on_a_closed_parent_after_a_split_and_not_on_its_children(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    before_split = put(kinesis, stream, 15)
    split(kinesis, stream, only_shard(kinesis, stream))
    after_split = put(kinesis, stream, 10, start=100)
    parent, *children = list_shards(kinesis, stream)
    assert parent.closed and len(children) == 2

    records, result = read(FaultyKinesis(kinesis, budget=20), stream, parent)
    assert data(records) == before_split
    assert result.reached_shard_end
    assert result.last_sequence_number == records[-1].sequence_number

    # the end comes from the service's answer, not only from the listing the caller passed in
    as_if_open = dataclasses.replace(parent, ending_sequence_number=None)
    records, result = read(FaultyKinesis(kinesis, budget=20), stream, as_if_open)
    assert data(records) == before_split and result.reached_shard_end

    child_records: list[Record] = []
    for child in children:
        records, result = read(FaultyKinesis(kinesis, budget=20), stream, child)
        assert not result.reached_shard_end
        child_records += records
    assert Counter(data(child_records)) == Counter(after_split)


@BOTH
def test_closed_parent_without_records_reaches_shard_end(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    split(kinesis, stream, only_shard(kinesis, stream))
    parent = list_shards(kinesis, stream)[0]

    records, result = read(FaultyKinesis(kinesis, budget=20), stream, parent)

    assert records == []
    assert result.reached_shard_end
    assert result.last_sequence_number is None


@BOTH
def test_sequence_numbers_are_compared_as_integers(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    put(kinesis, stream, 5)
    shard = only_shard(kinesis, stream)
    everything, _ = read(kinesis, stream, shard)
    assert {len(r.sequence_number) for r in everything} == {56}, "the emulators send 56-digit sequence numbers"

    # 55 nines: larger than every record's sequence number as text, smaller as a number
    nothing, _ = read(kinesis, stream, shard, end=EndBound(sequence_number="9" * 55))
    assert nothing == []
    # one above the third record, as a number ("...9" + 1 carries, which text order gets wrong)
    bound = str(int(everything[2].sequence_number) + 1)
    three, _ = read(kinesis, stream, shard, end=EndBound(sequence_number=bound))
    assert three == everything[:3]


@pytest.mark.parametrize("prefetch", [False, True], ids=["one-page", "prefetching"])
def test_shard_with_more_than_ten_thousand_records_holds_at_most_two_pages(
    kinesis: Any, streams: Any, prefetch: bool
) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 12_345, keys=4)
    faulty = FaultyKinesis(kinesis)
    shard = only_shard(kinesis, stream)
    reader = ShardReader(faulty, stream, shard, StartPosition.trim_horizon(), limits=FAST, prefetch=prefetch)

    calls_when_yielded: list[int] = []
    received: list[str] = []
    for record in reader:
        calls_when_yielded.append(faulty.count("get_records"))
        received.append(record.data.decode())

    assert received == sent
    pages = [len((c.response or {}).get("Records", [])) for c in faulty.of("get_records")]
    assert sum(pages) == 12_345 and len([p for p in pages if p]) >= 2
    assert max(pages) <= 10_000
    assert all(c.params["Limit"] == 10_000 for c in faulty.of("get_records"))
    # A record of page k is handed out once page k arrived and before page k + 2 is asked for:
    # with prefetch the next page is being fetched meanwhile, without it not yet.
    arrived = [page_number for page_number, size in enumerate(pages, start=1) for _ in range(size)]
    ahead = 1 if prefetch else 0
    assert all(page <= calls <= page + ahead for page, calls in zip(arrived, calls_when_yielded, strict=True))
    assert reader.result().records == 12_345


def test_page_bytes_asks_for_pages_of_about_that_size_at_the_average_record_size_read_so_far(
    kinesis: Any, streams: Any
) -> None:
    stream = streams.create(shards=1)
    sent = put_kib(kinesis, stream, 3_000, kib=2)  # 2 KiB of data and a 2- or 3-character key each
    faulty = FaultyKinesis(kinesis)
    records, result = read(faulty, stream, only_shard(kinesis, stream), page_bytes=512 * 1024)

    assert data(records) == sent and result.records == 3_000
    limits = [c.params["Limit"] for c in faulty.of("get_records")]
    # The first page assumes 1 KiB records (512); after it, 512 KiB at ~2 KiB a record.
    assert limits[0] == 512
    assert all(250 <= limit <= 256 for limit in limits[1:]), limits
    pages = [len((c.response or {}).get("Records", [])) for c in faulty.of("get_records")]
    assert max(pages) == 512 and sum(pages) == 3_000


# -- faults ----------------------------------------------------------------------------------


@BOTH
def test_throttling_is_retried_with_backoff_then_succeeds(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 10)
    faulty = FaultyKinesis(kinesis).fail("get_records", "ProvisionedThroughputExceededException", first=3)
    clock = FakeClock()

    records, result = read(faulty, stream, only_shard(kinesis, stream), backoff=NO_WAIT_BACKOFF, **_timing(clock))

    assert data(records) == sent
    assert result.throttled_calls == 3
    assert result.get_records_calls == faulty.count("get_records") == 5
    assert len(clock.sleeps) == 3, "one backoff wait per throttled call (no pacing: unlimited)"
    for attempt, wait in enumerate(clock.sleeps, start=1):
        assert 0 <= wait <= min(NO_WAIT_BACKOFF.cap, NO_WAIT_BACKOFF.base * 2 ** (attempt - 1))


def test_throttled_get_shard_iterator_is_retried(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 5)
    faulty = FaultyKinesis(kinesis).fail("get_shard_iterator", "ProvisionedThroughputExceededException", first=2)
    clock = FakeClock()

    records, _ = read(faulty, stream, only_shard(kinesis, stream), backoff=NO_WAIT_BACKOFF, **_timing(clock))

    assert data(records) == sent
    assert faulty.count("get_shard_iterator") == 3 and len(clock.sleeps) == 2


def test_persistent_throttling_raises_throttled_error_after_the_configured_attempts(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    put(kinesis, stream, 3)
    faulty = FaultyKinesis(kinesis).fail("get_records", "ProvisionedThroughputExceededException", always=True)
    clock = FakeClock()
    reader = ShardReader(
        faulty,
        stream,
        only_shard(kinesis, stream),
        StartPosition.trim_horizon(),
        limits=FAST,
        backoff=NO_WAIT_BACKOFF,
        **_timing(clock),
    )

    with pytest.raises(ThrottledError, match="GetRecords") as raised:
        list(reader)

    assert "ProvisionedThroughputExceeded" in str(raised.value)
    assert faulty.count("get_records") == NO_WAIT_BACKOFF.attempts
    assert reader.throttled_calls == NO_WAIT_BACKOFF.attempts
    assert len(clock.sleeps) == NO_WAIT_BACKOFF.attempts - 1


@pytest.mark.parametrize(
    ("expired_call", "resume_after_index"),
    [(1, None), (3, 9), (5, 19)],
    ids=["first_call", "mid_stream_after_two_pages", "after_the_last_page"],
)
def test_expired_iterator_is_renewed_after_the_last_record_read(
    kinesis: Any, streams: Any, expired_call: int, resume_after_index: int | None
) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 22)
    shard = only_shard(kinesis, stream)
    everything, _ = read(kinesis, stream, shard)
    faulty = FaultyKinesis(kinesis).fail("get_records", "ExpiredIteratorException", calls={expired_call})

    records, result = read(faulty, stream, shard, limits=dataclasses.replace(FAST, records_per_call=5))

    assert data(records) == sent, "no duplicate, no gap"
    assert result.iterator_renewals == 1
    first, renewal = (c.params for c in faulty.of("get_shard_iterator"))
    assert first["ShardIteratorType"] == "TRIM_HORIZON"
    if resume_after_index is None:
        assert renewal["ShardIteratorType"] == "TRIM_HORIZON"
    else:
        assert renewal["ShardIteratorType"] == "AFTER_SEQUENCE_NUMBER"
        assert renewal["StartingSequenceNumber"] == everything[resume_after_index].sequence_number


def test_expired_iterator_before_any_record_resumes_at_the_checkpoint(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 10)
    shard = only_shard(kinesis, stream)
    everything, _ = read(kinesis, stream, shard)
    faulty = FaultyKinesis(kinesis).fail("get_records", "ExpiredIteratorException", calls={1})

    records, _ = read(faulty, stream, shard, StartPosition.after(everything[3].sequence_number))

    assert data(records) == sent[4:]
    renewal = faulty.of("get_shard_iterator")[1].params
    assert renewal["ShardIteratorType"] == "AT_SEQUENCE_NUMBER"
    assert renewal["StartingSequenceNumber"] == everything[3].sequence_number


def test_iterator_that_keeps_expiring_raises_instead_of_looping(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    put(kinesis, stream, 3)
    faulty = FaultyKinesis(kinesis, budget=50).fail("get_records", "ExpiredIteratorException", always=True)

    with pytest.raises(KinesisBatchError, match="ExpiredIterator"):
        read(faulty, stream, only_shard(kinesis, stream), sleep=FakeClock().sleep)

    assert faulty.count("get_records") <= 10


@BOTH
def test_closed_shard_ends_on_a_page_without_next_iterator_even_with_records_in_it(kinesis: Any, streams: Any) -> None:
    """AWS ends a closed shard with its last page of records and no NextShardIterator."""
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 12)
    shard = only_shard(kinesis, stream)  # open in the listing: the page alone must say "ended"
    everything, _ = read(kinesis, stream, shard)
    last_sequence = everything[-1].sequence_number

    def end_of_closed_shard(_n: int, _params: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
        if response["Records"] and response["Records"][-1]["SequenceNumber"] == last_sequence:
            response.pop("NextShardIterator", None)
            response["MillisBehindLatest"] = 3_600_000  # not the tip signal: only the missing iterator
        return response

    faulty = FaultyKinesis(kinesis, budget=20).alter("get_records", end_of_closed_shard)
    records, result = read(faulty, stream, shard, limits=dataclasses.replace(FAST, records_per_call=5))

    assert data(records) == sent
    assert result.reached_shard_end
    assert result.get_records_calls == 3, "three pages, the last one without NextShardIterator"


@BOTH
def test_empty_pages_behind_latest_in_the_middle_of_a_shard_do_not_end_the_read(kinesis: Any, streams: Any) -> None:
    """AWS may answer with no records while MillisBehindLatest says there is more to read."""
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 15)
    shard = only_shard(kinesis, stream)

    def empty_page(params: dict[str, Any]) -> dict[str, Any]:
        return {"Records": [], "NextShardIterator": params["ShardIterator"], "MillisBehindLatest": 86_400_000}

    faulty = FaultyKinesis(kinesis, budget=20)
    faulty.alter(
        "get_records",
        lambda n, params, response: empty_page(params) if n in {1, 3, 4} else response,
    )
    records, result = read(faulty, stream, shard, limits=dataclasses.replace(FAST, records_per_call=5))

    assert data(records) == sent
    assert not result.reached_shard_end
    assert result.get_records_calls == 3 + 3 + 1, "three empty pages, three pages of records, the tip"


# -- pacing ----------------------------------------------------------------------------------


def _timing(clock: FakeClock) -> dict[str, Any]:
    return {"clock": clock, "sleep": clock.sleep}


def assert_at_most_per_second(times: list[float], calls: int) -> None:
    """No window of one second holds more than ``calls`` call starts."""
    for i in range(len(times) - calls):
        assert times[i + calls] - times[i] >= 1.0 - 1e-6, (
            f"calls {i}..{i + calls} within {times[i + calls] - times[i]} s"
        )


def test_default_limits_keep_get_records_within_five_calls_per_second(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 24)
    clock = FakeClock()
    faulty = FaultyKinesis(kinesis, clock=clock)

    records, _ = read(
        faulty, stream, only_shard(kinesis, stream), limits=ReadLimits(records_per_call=2), **_timing(clock)
    )

    assert data(records) == sent
    times = [c.at for c in faulty.of("get_records")]
    assert len(times) == 13
    assert_at_most_per_second(times, 5)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps == pytest.approx([0.2] * 12), "small pages: paced by the call limit only, and not slower"


def test_pacing_holds_across_throttling_and_iterator_renewal(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 24)
    clock = FakeClock()
    faulty = FaultyKinesis(kinesis, clock=clock)
    faulty.fail("get_records", "ProvisionedThroughputExceededException", calls={3, 4})
    faulty.fail("get_records", "ExpiredIteratorException", calls={7, 9})
    backoff = Backoff(base=0.01, cap=0.02, attempts=5)  # retries sooner than the pace allows

    records, result = read(
        faulty,
        stream,
        only_shard(kinesis, stream),
        limits=ReadLimits(records_per_call=2),
        backoff=backoff,
        **_timing(clock),
    )

    assert data(records) == sent
    assert (result.throttled_calls, result.iterator_renewals) == (2, 2)
    times = [c.at for c in faulty.of("get_records")]
    assert_at_most_per_second(times, 5)
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.2 - 1e-9, "failed calls count against the pace"


def test_default_limits_respect_two_mib_per_second_given_response_sizes(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    blob = 700 * 1024
    for i in range(6):
        kinesis.put_record(StreamName=stream, PartitionKey=f"k{i}", Data=bytes([65 + i]) * blob)
    clock = FakeClock()
    faulty = FaultyKinesis(kinesis, clock=clock)

    records, result = read(
        faulty, stream, only_shard(kinesis, stream), limits=ReadLimits(records_per_call=2), **_timing(clock)
    )

    assert [len(r.data) for r in records] == [blob] * 6
    calls = faulty.of("get_records")
    sizes = [response_bytes(c.response or {}) for c in calls]
    assert sizes[:3] == [2 * (blob + 2)] * 3 and sizes[3:] == [0]
    start = calls[0].at
    for i, call in enumerate(calls):
        read_before = sum(sizes[:i])
        assert read_before <= 2 * MIB * (call.at - start) + 1e-6, f"call {i + 1} came too early"
    # and no slower than it needs: each wait is what the previous response's size asks for
    waits = [b.at - a.at for a, b in itertools.pairwise(calls)]
    assert waits == pytest.approx([max(0.2, size / (2 * MIB)) for size in sizes[:-1]])
    assert result.bytes == 6 * blob


# -- errors ----------------------------------------------------------------------------------


def test_server_failures_are_retried_like_throttling(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 6)
    faulty = FaultyKinesis(kinesis).fail("get_records", "InternalFailure", status=500, calls={2, 3})
    clock = FakeClock()

    records, result = read(
        faulty,
        stream,
        only_shard(kinesis, stream),
        limits=dataclasses.replace(FAST, records_per_call=4),
        backoff=NO_WAIT_BACKOFF,
        **_timing(clock),
    )

    assert data(records) == sent
    assert len(clock.sleeps) == 2 and result.throttled_calls == 0
    assert faulty.count("get_records") == 5


@pytest.mark.parametrize(
    "options",
    [
        {"records_per_call": 0},
        {"records_per_call": 10_001},
        {"records_per_call": 2.5},
        {"calls_per_second": 0},
        {"calls_per_second": -5},
        {"bytes_per_second": 0},
        {"bytes_per_second": "2MiB"},
    ],
    ids=str,
)
def test_impossible_read_limits_raise_illegal_argument(options: dict[str, Any]) -> None:
    with pytest.raises(IllegalArgumentError):
        ReadLimits(**options)


@BOTH
def test_unknown_stream_raises_stream_not_found_without_retrying(kinesis: Any) -> None:
    faulty = FaultyKinesis(kinesis)
    clock = FakeClock()
    shard = Shard("shardId-000000000000")

    with pytest.raises(StreamNotFoundError, match="no-such-stream"):
        read(faulty, "no-such-stream", shard, **_timing(clock))

    assert faulty.count("get_shard_iterator") == 1 and faulty.count("get_records") == 0
    assert clock.sleeps == []


def test_unknown_shard_raises_stream_not_found(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)

    with pytest.raises(StreamNotFoundError, match="shardId-000000000009"):
        read(kinesis, stream, Shard("shardId-000000000009"), sleep=FakeClock().sleep)


def test_stream_deleted_during_the_read_raises_stream_not_found(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    put(kinesis, stream, 10)
    faulty = FaultyKinesis(kinesis).fail("get_records", "ResourceNotFoundException", calls={2})
    reader = ShardReader(
        faulty,
        stream,
        only_shard(kinesis, stream),
        StartPosition.trim_horizon(),
        limits=dataclasses.replace(FAST, records_per_call=4),
        sleep=FakeClock().sleep,
    )

    got: list[Record] = []
    with pytest.raises(StreamNotFoundError):
        got.extend(reader)

    assert len(got) == 4 and reader.result().records == 4
    assert faulty.count("get_records") == 2


def test_unreachable_endpoint_raises_dependency_error_after_bounded_retries() -> None:
    client = aws.kinesis_client(endpoint_url=f"http://127.0.0.1:{free_port()}")
    clock = FakeClock()
    backoff = Backoff(base=0.1, cap=1.0, attempts=3)

    with pytest.raises(DependencyError, match="cannot reach"):
        read(client, "any-stream", Shard("shardId-000000000000"), backoff=backoff, **_timing(clock))

    assert len(clock.sleeps) == backoff.attempts - 1


# -- closed shards that never end their iterator chain; LATEST across an expiry ----------------


def test_one_empty_page_at_the_tip_of_a_closed_shard_does_not_end_it(kinesis: Any, streams: Any) -> None:
    """On AWS an empty page may come from a sparse stretch; only a run of them (moto) ends a shard."""
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 12)
    parent = only_shard(kinesis, stream)
    split(kinesis, stream, parent)
    closed = next(s for s in list_shards(kinesis, stream) if s.shard_id == parent.shard_id)

    def empty_at_tip(params: dict[str, Any]) -> dict[str, Any]:
        return {"Records": [], "NextShardIterator": params["ShardIterator"], "MillisBehindLatest": 0}

    faulty = FaultyKinesis(kinesis, budget=20).alter(
        "get_records", lambda n, params, response: empty_at_tip(params) if n in {1, 3} else response
    )
    records, result = read(faulty, stream, closed, limits=dataclasses.replace(FAST, records_per_call=5))

    assert data(records) == sent
    assert result.reached_shard_end


# On kinesalite only: the fault hands the last page's own iterator out again, which kinesalite
# answers with an empty page and kinesis-local with the same records again (its iterators are
# positions, not cursors), so the simulation itself would never end there.
@pytest.mark.parametrize("emulator", ["kinesalite"], indirect=True)
def test_a_closed_shard_that_keeps_handing_out_iterators_ends_after_a_few_empty_pages(
    kinesis: Any, streams: Any
) -> None:
    """moto's closed shards never answer without NextShardIterator."""
    stream = streams.create(shards=1)
    sent = put(kinesis, stream, 4)
    parent = only_shard(kinesis, stream)
    split(kinesis, stream, parent)
    closed = next(s for s in list_shards(kinesis, stream) if s.shard_id == parent.shard_id)

    def never_ending(_n: int, params: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
        response.pop("ChildShards", None)
        response["NextShardIterator"] = response.get("NextShardIterator") or params["ShardIterator"]
        response["MillisBehindLatest"] = 0
        return response

    faulty = FaultyKinesis(kinesis, budget=20).alter("get_records", never_ending)
    records, result = read(faulty, stream, closed)

    assert data(records) == sent
    assert result.reached_shard_end
    assert faulty.count("get_records") <= 1 + 4, "the records, then a bounded number of empty pages"


def test_latest_iterator_expired_before_any_record_resumes_at_its_time_not_at_a_new_latest(
    kinesis: Any, streams: Any
) -> None:
    """A fresh LATEST iterator would skip what arrived while the first one sat unused."""
    stream = streams.create(shards=1)
    put(kinesis, stream, 3)  # before LATEST: never read
    shard = only_shard(kinesis, stream)
    arrived: list[str] = []

    def arrive_before_renewal(number: int, _params: dict[str, Any]) -> None:
        if number == 2:  # the renewal: records arrived after the first LATEST iterator
            arrived.extend(put(kinesis, stream, 2, start=100))

    faulty = FaultyKinesis(kinesis, budget=20).before("get_shard_iterator", arrive_before_renewal)
    faulty.fail("get_records", "ExpiredIteratorException", calls=[1])
    records, result = read(faulty, stream, shard, StartPosition.latest())

    assert data(records) == arrived == ["100", "101"]
    assert result.iterator_renewals == 1
    renewal = faulty.of("get_shard_iterator")[-1].params
    assert renewal["ShardIteratorType"] == "AT_TIMESTAMP"


# -- retention trimmed past the checkpoint ---------------------------------------------------------


def _trimmed_checkpoint_read(kinesis: Any, streams: Any, **options: Any) -> tuple[list[str], Any, list[Record]]:
    """Resume after record 3 while retention has removed records up to and including it."""
    stream = streams.create(shards=1)
    put(kinesis, stream, 10)
    shard = only_shard(kinesis, stream)
    everything, _ = read(kinesis, stream, shard)
    checkpoint = everything[3]

    def trimmed(_n: int, _params: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
        response["Records"] = [r for r in response["Records"] if int(r["SequenceNumber"]) > checkpoint.position[0]]
        return response

    faulty = FaultyKinesis(kinesis, budget=20).alter("get_records", trimmed)
    reader = ShardReader(faulty, stream, shard, StartPosition.after(checkpoint.sequence_number), limits=FAST, **options)
    return [checkpoint.sequence_number], reader, everything


def test_resume_from_a_checkpoint_retention_trimmed_raises_trimmed_data(kinesis: Any, streams: Any) -> None:
    (checkpoint,), reader, _ = _trimmed_checkpoint_read(kinesis, streams)
    with pytest.raises(TrimmedDataError, match=checkpoint):
        list(reader)
    assert reader.records == 0


def test_resume_from_a_trimmed_checkpoint_with_gaps_allowed_records_the_gap(kinesis: Any, streams: Any) -> None:
    (checkpoint,), reader, everything = _trimmed_checkpoint_read(kinesis, streams, allow_gaps=True)
    records = list(reader)
    assert data(records) == data(everything[4:])
    assert reader.result().trimmed_after == checkpoint


def test_an_ordinary_resume_reports_no_gap_and_the_backlog_age(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    put(kinesis, stream, 5)
    shard = only_shard(kinesis, stream)
    everything, _ = read(kinesis, stream, shard)
    records, result = read(kinesis, stream, shard, StartPosition.after(everything[1].sequence_number))
    assert data(records) == data(everything[2:])
    assert result.trimmed_after is None
    assert result.first_millis_behind_latest is not None
