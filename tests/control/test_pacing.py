"""The process's pace: one key's calls start at least its interval apart, whichever thread asks;
a throttle doubles the interval, an answer halves it, never below the documented limit's nor
above MAX_INTERVAL; keys of other accounts, streams or operations do not wait on each other.
The pacer only says how long: its caller sleeps."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.control.pacing import MAX_INTERVAL, Pacer
from tests.faults import FakeClock


def test_one_keys_calls_start_a_twentieth_of_a_second_apart_at_twenty_a_second() -> None:
    clock = FakeClock(start=0.0)
    pacer = Pacer(clock)
    starts = []
    for _ in range(5):
        clock.sleep(pacer.turn("DescribeStreamSummary", "acct", "s1"))
        starts.append(clock.now)
    assert starts == pytest.approx([0.0, 0.05, 0.10, 0.15, 0.20])


@pytest.mark.parametrize(
    ("first", "second", "waits"),
    [
        (("DescribeStreamSummary", "a", "s1"), ("DescribeStreamSummary", "a", "s2"), True),  # one account's limit
        (("DescribeStreamSummary", "a", "s1"), ("DescribeStreamSummary", "b", "s1"), False),  # another account
        (("ListShards", "a", "s1"), ("ListShards", "a", "s2"), False),  # a stream's own limit
        (("ListShards", "a", "s1"), ("ListShards", "a", "s1"), True),
        (("DescribeStreamSummary", "a", "s1"), ("DescribeStream", "a", "s1"), False),  # another operation
        (("DescribeTable", "a", "t"), ("DescribeTable", "a", "t"), False),  # no documented rate: never paced
    ],
)
def test_calls_wait_only_on_their_own_key(
    first: tuple[str, str, str], second: tuple[str, str, str], waits: bool
) -> None:
    pacer = Pacer(FakeClock(start=0.0))
    pacer.turn(*first)
    assert (pacer.turn(*second) > 0) is waits


def test_a_throttle_doubles_the_interval_and_answers_bring_it_back_to_the_limit() -> None:
    pacer = Pacer(FakeClock(start=0.0))
    key = ("DescribeStreamSummary", "a", "s")
    pacer.answered(*key, throttled=True)
    pacer.answered(*key, throttled=True)
    assert pacer.interval(*key) == pytest.approx(0.2)
    for _ in range(20):
        pacer.answered(*key, throttled=False)
    assert pacer.interval(*key) == pytest.approx(0.05)


@given(st.lists(st.booleans(), max_size=60))
def test_the_interval_stays_between_the_documented_limit_and_the_cap(outcomes: list[bool]) -> None:
    pacer = Pacer(FakeClock(start=0.0))
    for throttled in outcomes:
        pacer.answered("DescribeStreamSummary", "a", "s", throttled=throttled)
        assert 0.05 - 1e-12 <= pacer.interval("DescribeStreamSummary", "a", "s") <= MAX_INTERVAL


def test_a_forgotten_pace_is_a_new_processs() -> None:
    pacer = Pacer(FakeClock(start=0.0))
    pacer.turn("DescribeStreamSummary", "a", "s")
    pacer.answered("DescribeStreamSummary", "a", "s", throttled=True)
    pacer.forget()
    assert pacer.turn("DescribeStreamSummary", "a", "s") == 0.0
    assert pacer.interval("DescribeStreamSummary", "a", "s") == pytest.approx(0.05)


def test_threads_of_one_process_take_distinct_turns() -> None:
    pacer = Pacer(FakeClock(start=0.0))  # turns are claimed at once, whoever sleeps them
    turns: list[float] = []
    lock = threading.Lock()

    def call() -> None:
        waited = pacer.turn("DescribeStream", "a", "s")
        with lock:
            turns.append(waited)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(turns) == pytest.approx([i * 0.1 for i in range(8)])  # DescribeStream: 10 a second
