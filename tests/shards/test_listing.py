"""Paginated ListShards on real emulators, with AWS faults injected around the real client."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from devkit.limits_proxy import LimitsProxy
from devkit.stack import LocalStack, free_port

from kinesis_batch import aws
from kinesis_batch._backoff import Backoff
from kinesis_batch.errors import (
    DependencyError,
    KinesisBatchError,
    StreamNotFoundError,
    ThrottledError,
)
from kinesis_batch.shards import listing
from kinesis_batch.shards.listing import describe_stream, list_shards
from tests.faults import FakeClock, FaultyKinesis
from tests.streams import open_shards, split

BOTH = pytest.mark.parametrize("emulator", ["kinesalite", "kinesis-local"], indirect=True)
# kinesalite ignores MaxResults (one page, whatever is asked); kinesis-local pages like AWS.
PAGING = pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)
BACKOFF = Backoff(base=0.1, cap=0.4, attempts=5)


def _ids(shards: list[Any]) -> list[str]:
    return [s.shard_id for s in shards]


@PAGING
def test_listing_follows_next_token_and_returns_every_shard_once(
    kinesis: Any, streams: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = streams.create(shards=3)
    split(kinesis, stream, open_shards(kinesis, stream)[0])  # 5 shards: a closed parent and two children
    monkeypatch.setattr(listing, "PAGE_SIZE", 2)
    faulty = FaultyKinesis(kinesis)

    shards = list_shards(faulty, stream)

    assert _ids(shards) == [f"shardId-00000000000{i}" for i in range(5)]
    calls = faulty.of("list_shards")
    assert len(calls) == 3, "5 shards in pages of 2"
    assert calls[0].params == {"StreamName": stream, "MaxResults": 2}
    for call in calls[1:]:  # AWS rejects StreamName together with NextToken
        assert set(call.params) == {"NextToken", "MaxResults"}
    assert [len(c.response["Shards"]) for c in calls if c.response] == [2, 2, 1]
    assert calls[-1].response is not None and not calls[-1].response.get("NextToken")


@BOTH
def test_listing_describes_closed_parents_and_their_children(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    split(kinesis, stream, open_shards(kinesis, stream)[0])

    parent, *children = list_shards(kinesis, stream)

    assert parent.closed and parent.ending_sequence_number is not None
    assert [c.parent_ids for c in children] == [(parent.shard_id,), (parent.shard_id,)]
    assert not any(c.closed for c in children)
    low, high = sorted(children, key=lambda c: c.starting_hash_key)
    assert (low.starting_hash_key, high.ending_hash_key) == (parent.starting_hash_key, parent.ending_hash_key)
    assert low.ending_hash_key + 1 == high.starting_hash_key
    assert isinstance(low.ending_hash_key, int)


@BOTH
def test_throttled_listing_is_retried_with_backoff_then_succeeds(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=2)
    faulty = FaultyKinesis(kinesis).fail("list_shards", "LimitExceededException", first=3)
    clock = FakeClock()

    shards = list_shards(faulty, stream, backoff=BACKOFF, sleep=clock.sleep)

    assert _ids(shards) == ["shardId-000000000000", "shardId-000000000001"]
    assert faulty.count("list_shards") == 4
    assert len(clock.sleeps) == 3, "one backoff wait per throttled call"
    for attempt, wait in enumerate(clock.sleeps, start=1):
        assert 0 <= wait <= min(BACKOFF.cap, BACKOFF.base * 2 ** (attempt - 1))


@PAGING
def test_throttling_on_a_later_page_retries_that_page_with_the_same_token(
    kinesis: Any, streams: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = streams.create(shards=5)
    monkeypatch.setattr(listing, "PAGE_SIZE", 2)
    faulty = FaultyKinesis(kinesis).fail("list_shards", "LimitExceededException", calls={2, 3})
    clock = FakeClock()

    shards = list_shards(faulty, stream, backoff=BACKOFF, sleep=clock.sleep)

    assert Counter(_ids(shards)) == Counter(f"shardId-00000000000{i}" for i in range(5))
    calls = faulty.of("list_shards")
    assert [c.error for c in calls] == [None, "LimitExceededException", "LimitExceededException", None, None]
    assert calls[1].params == calls[2].params == calls[3].params
    assert "NextToken" in calls[3].params


@BOTH
def test_persistent_throttling_raises_throttled_error_after_the_configured_attempts(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    faulty = FaultyKinesis(kinesis).fail("list_shards", "LimitExceededException", always=True)
    clock = FakeClock()

    with pytest.raises(ThrottledError, match="ListShards") as raised:
        list_shards(faulty, stream, backoff=BACKOFF, sleep=clock.sleep)

    assert stream in str(raised.value)
    assert faulty.count("list_shards") == BACKOFF.attempts
    assert len(clock.sleeps) == BACKOFF.attempts - 1


@PAGING
def test_expired_next_token_restarts_the_listing_once_without_duplicates(
    kinesis: Any, streams: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = streams.create(shards=5)
    monkeypatch.setattr(listing, "PAGE_SIZE", 2)
    faulty = FaultyKinesis(kinesis).fail("list_shards", "ExpiredNextTokenException", calls={3})

    shards = list_shards(faulty, stream)

    assert _ids(shards) == [f"shardId-00000000000{i}" for i in range(5)]
    calls = faulty.of("list_shards")
    assert [("StreamName" in c.params, c.error) for c in calls] == [
        (True, None),
        (False, None),
        (False, "ExpiredNextTokenException"),
        (True, None),  # restarted from the first page
        (False, None),
        (False, None),
    ]


@PAGING
def test_a_second_expired_next_token_raises_instead_of_looping(
    kinesis: Any, streams: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = streams.create(shards=3)
    monkeypatch.setattr(listing, "PAGE_SIZE", 2)
    faulty = FaultyKinesis(kinesis).fail(
        "list_shards", "ExpiredNextTokenException", when=lambda _n, params: "NextToken" in params
    )

    with pytest.raises(KinesisBatchError, match="ExpiredNextToken"):
        list_shards(faulty, stream)

    assert faulty.count("list_shards") == 4, "page 1, expired, page 1 again, expired again: then stop"


@BOTH
def test_unknown_stream_raises_stream_not_found_without_retrying(kinesis: Any) -> None:
    faulty = FaultyKinesis(kinesis)
    clock = FakeClock()

    with pytest.raises(StreamNotFoundError, match="no-such-stream"):
        list_shards(faulty, "no-such-stream", sleep=clock.sleep)

    assert faulty.count("list_shards") == 1
    assert clock.sleeps == []


def test_a_server_failure_is_retried_then_ends_the_listing_with_dependency_error(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=1)
    faulty = FaultyKinesis(kinesis).fail("list_shards", "InternalFailure", always=True, status=500)
    clock = FakeClock()

    with pytest.raises(DependencyError, match="InternalFailure"):
        list_shards(faulty, stream, backoff=BACKOFF, sleep=clock.sleep)

    assert faulty.count("list_shards") == BACKOFF.attempts
    assert len(clock.sleeps) == BACKOFF.attempts - 1


def test_a_passing_server_failure_is_ridden_out(kinesis: Any, streams: Any) -> None:
    stream = streams.create(shards=2)
    faulty = FaultyKinesis(kinesis).fail("list_shards", "InternalFailure", first=2, status=500)
    clock = FakeClock()

    assert len(list_shards(faulty, stream, backoff=BACKOFF, sleep=clock.sleep)) == 2
    assert faulty.count("list_shards") == 3 and len(clock.sleeps) == 2


def test_unreachable_endpoint_raises_dependency_error_after_the_backoff() -> None:
    client = aws.kinesis_client(endpoint_url=f"http://127.0.0.1:{free_port()}")
    clock = FakeClock()

    with pytest.raises(DependencyError, match=r"ListShards.*cannot reach the endpoint"):
        list_shards(client, "any-stream", backoff=BACKOFF, sleep=clock.sleep)

    assert len(clock.sleeps) == BACKOFF.attempts - 1


def test_a_dropped_connection_is_retried_by_the_listing_and_the_description(
    stack: LocalStack, emulator: str, streams: Any
) -> None:
    """A kept-alive connection closed under a call (kinesalite closes idle ones after 5 s, AWS's
    load balancers too) is a ConnectionClosedError; the control plane's calls ride it out."""
    stream = streams.create(shards=2)
    with LimitsProxy(stack.kinesis[emulator].url) as proxy:
        client = aws.kinesis_client(endpoint_url=proxy.url)
        proxy.drop("DescribeStreamSummary", 2)
        proxy.drop("ListShards", 1)
        clock = FakeClock()

        described = describe_stream(client, stream, backoff=BACKOFF, sleep=clock.sleep)
        shards = list_shards(client, stream, backoff=BACKOFF, sleep=clock.sleep)

        assert described.name == stream and len(shards) == 2
        assert proxy.dropped == {"DescribeStreamSummary": 2, "ListShards": 1}
        assert len(clock.sleeps) == 3


def test_a_connection_dropped_every_time_is_a_dependency_error_after_the_backoff(
    stack: LocalStack, emulator: str, streams: Any
) -> None:
    stream = streams.create(shards=1)
    with LimitsProxy(stack.kinesis[emulator].url) as proxy:
        client = aws.kinesis_client(endpoint_url=proxy.url)
        proxy.drop("DescribeStreamSummary", BACKOFF.attempts)

        with pytest.raises(DependencyError, match=r"DescribeStreamSummary.*cannot reach the endpoint"):
            describe_stream(client, stream, backoff=BACKOFF, sleep=FakeClock().sleep)
        assert proxy.dropped == {"DescribeStreamSummary": BACKOFF.attempts}
