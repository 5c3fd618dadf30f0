"""A call made when its result is asked for, or ahead in a daemon thread: once either way, its
value or its error handed to the caller's thread."""

from __future__ import annotations

import threading

import pytest

from kinesis_batch._ahead import Ahead


def test_a_call_not_made_ahead_runs_once_when_its_result_is_asked_for() -> None:
    calls: list[int] = []
    later = Ahead(lambda x: calls.append(x) or x * 2, 21, ahead=False)
    assert calls == []
    assert later.result() == 42 and later.result() == 42
    assert calls == [21]


def test_a_call_made_ahead_runs_at_once_in_a_daemon_thread() -> None:
    started = threading.Event()
    seen: list[threading.Thread] = []

    def work() -> str:
        seen.append(threading.current_thread())
        started.set()
        return "done"

    ahead = Ahead(work, ahead=True)
    assert started.wait(10), "the call did not start before its result was asked for"
    assert ahead.result() == "done"
    assert seen[0] is not threading.current_thread() and seen[0].daemon


@pytest.mark.parametrize("ahead", [False, True])
def test_what_the_call_raised_is_raised_in_the_callers_thread(ahead: bool) -> None:
    def fails() -> None:
        raise ValueError("no")

    made = Ahead(fails, ahead=ahead)
    for _ in range(2):  # every time it is asked
        with pytest.raises(ValueError, match="no"):
            made.result()
