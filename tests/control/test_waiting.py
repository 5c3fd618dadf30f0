"""One control-plane call's wait: a budget of seconds slept, not of tries; every retryable
failure counted by operation; a progress line once the wait passes 5 s, then every 30 s; the
budget from the environment, a bad value one clear line."""

from __future__ import annotations

import logging

import pytest

from kinesis_batch._backoff import Backoff
from kinesis_batch.control.waiting import (
    FAILURE_CAP,
    FAILURES_IN_A_ROW,
    WAIT_ENV,
    Tally,
    Waited,
    Waiting,
    met_since,
    wait_seconds,
)
from kinesis_batch.errors import DependencyError, IllegalArgumentError, ThrottledError

STEADY = Backoff(base=2.0, cap=2.0, attempts=1000, jitter=lambda: 1.0)  # 2 s every time


def test_the_tries_end_when_the_budget_of_seconds_is_spent_the_last_pause_trimmed_to_it() -> None:
    waiting = Waiting("DescribeStreamSummary", STEADY, budget=5.0, tally=Tally())
    throttle = ThrottledError("Rate exceeded")
    pauses = [waiting.pause(attempt, throttle) for attempt in (1, 2, 3)]
    assert pauses == [2.0, 2.0, 1.0]
    with pytest.raises(ThrottledError) as raised:
        waiting.pause(4, throttle)
    assert raised.value is throttle


def test_a_budget_of_zero_raises_the_first_error() -> None:
    error = DependencyError("connection closed")
    with pytest.raises(DependencyError):
        Waiting("ListShards", STEADY, budget=0.0, tally=Tally()).pause(1, error)


def test_an_endpoint_failing_ten_times_in_a_row_is_down_but_throttles_between_failures_reset_the_count() -> None:
    failure, throttle = DependencyError("connection refused"), ThrottledError("Rate exceeded")
    waiting = Waiting("DescribeStreamSummary", STEADY, budget=3600.0, tally=Tally())
    for attempt in range(1, 3 * FAILURES_IN_A_ROW):  # every 7th call dropped, the others throttled
        waiting.pause(attempt, failure if attempt % 7 == 0 else throttle)
    down = Waiting("DescribeStreamSummary", STEADY, budget=3600.0, tally=Tally())
    for attempt in range(1, FAILURES_IN_A_ROW):
        down.pause(attempt, failure)
    with pytest.raises(DependencyError):
        down.pause(FAILURES_IN_A_ROW, failure)


def test_throttles_failures_and_seconds_are_counted_by_operation_and_resource() -> None:
    tally = Tally()
    waiting = Waiting("DescribeStreamSummary", STEADY, budget=60.0, resource="s1", tally=tally)
    waiting.pause(1, ThrottledError("Rate exceeded"))
    waiting.pause(2, ThrottledError("Rate exceeded"))
    waiting.pause(3, DependencyError("connection closed"))
    Waiting("ListShards", STEADY, budget=60.0, resource="s1", tally=tally).pause(1, ThrottledError("Rate exceeded"))
    assert tally.snapshot() == {
        ("DescribeStreamSummary", "s1"): Waited(throttles=2, failures=1, seconds=6.0),
        ("ListShards", "s1"): Waited(throttles=1, failures=0, seconds=2.0),
    }


def test_a_run_reads_what_its_own_resources_met_since_it_began() -> None:
    tally = Tally()
    Waiting("DescribeStreamSummary", STEADY, 60.0, resource="s1", tally=tally).pause(1, ThrottledError("x"))
    began = tally.snapshot()
    Waiting("DescribeStreamSummary", STEADY, 60.0, resource="s1", tally=tally).pause(1, ThrottledError("x"))
    Waiting("DescribeTable", STEADY, 60.0, resource="leases", tally=tally).pause(1, DependencyError("x"))
    Waiting("DescribeStreamSummary", STEADY, 60.0, resource="s2", tally=tally).pause(1, ThrottledError("x"))
    met = met_since(began, tally.snapshot(), frozenset({"s1", "leases"}))
    assert met == {"DescribeStreamSummary": Waited(1, 0, 2.0), "DescribeTable": Waited(0, 1, 2.0)}
    assert met_since(began, began, frozenset({"s1"})) == {}


def test_one_progress_line_after_five_seconds_of_waiting_then_one_every_thirty(
    caplog: pytest.LogCaptureFixture,
) -> None:
    waiting = Waiting("DescribeStreamSummary", STEADY, budget=300.0, tally=Tally())
    with caplog.at_level(logging.WARNING, logger="kinesis_batch.control.waiting"):
        for attempt in range(1, 21):  # 40 s of waits
            waiting.pause(attempt, ThrottledError("Rate exceeded"))
    assert [r.getMessage() for r in caplog.records] == [
        "waiting on the account's DescribeStreamSummary limit: 3 throttles, 0 dropped or failed calls, 6 s",
        "waiting on the account's DescribeStreamSummary limit: 18 throttles, 0 dropped or failed calls, 36 s",
    ]


@pytest.mark.parametrize(("environ", "seconds"), [({}, 300.0), ({WAIT_ENV: "45"}, 45.0), ({WAIT_ENV: " 0 "}, 0.0)])
def test_the_budget_is_the_environments_or_five_minutes(environ: dict[str, str], seconds: float) -> None:
    assert wait_seconds(environ) == seconds


@pytest.mark.parametrize("text", ["-1", "soon", "nan"])
def test_a_budget_that_is_no_number_of_seconds_is_one_clear_line(text: str) -> None:
    with pytest.raises(IllegalArgumentError, match=rf"^{WAIT_ENV}='{text}': expected seconds, 0 or more$"):
        wait_seconds({WAIT_ENV: text})


def test_a_failure_that_is_no_throttle_waits_at_most_five_seconds_a_throttle_up_to_the_backoffs_cap() -> None:
    long = Backoff(base=60.0, cap=60.0, attempts=1000, jitter=lambda: 1.0)
    waiting = Waiting("DescribeStreamSummary", long, budget=3600.0, tally=Tally())
    assert waiting.pause(1, DependencyError("connection closed")) == FAILURE_CAP
    assert waiting.pause(2, ThrottledError("Rate exceeded")) == 60.0


def test_with_no_throttle_the_progress_line_blames_the_endpoint_not_the_account(
    caplog: pytest.LogCaptureFixture,
) -> None:
    waiting = Waiting("DescribeStreamSummary", STEADY, budget=300.0, tally=Tally())
    with caplog.at_level(logging.WARNING, logger="kinesis_batch.control.waiting"):
        for attempt in (1, 2, 3):
            waiting.pause(attempt, DependencyError("connection refused"))
    assert [r.getMessage() for r in caplog.records] == [
        "waiting on the endpoint for DescribeStreamSummary: 3 dropped or failed calls, 6 s"
    ]
