"""What a run tells observers: every registered observer in order, one that fails logged and the
run going on, one that ends the run (a test's crash) ending it, and the observers shipped to the
Spark tasks only those registered for them."""

from __future__ import annotations

import logging

import pytest

from kinesis_batch.events import RUN_STEPS, STEPS, Event, emit, forget, observe, observing, task_observers


def test_every_observer_hears_every_event_in_order_and_none_after_it_is_forgotten() -> None:
    heard: list[tuple[str, str]] = []

    def first(event: Event) -> None:
        heard.append(("first", event.step))

    with observing(first), observing(lambda event: heard.append(("second", event.step))):
        emit(Event("prepared", "b-1"))
        emit(Event("read", "b-1"))
    emit(Event("published", "b-1"))  # nobody is listening now
    assert heard == [("first", "prepared"), ("second", "prepared"), ("first", "read"), ("second", "read")]


def test_an_observer_that_fails_is_logged_and_the_others_still_hear(caplog: pytest.LogCaptureFixture) -> None:
    heard: list[str] = []

    def broken(event: Event) -> None:
        raise RuntimeError("observer bug")

    with observing(broken), observing(lambda event: heard.append(event.step)), caplog.at_level(logging.ERROR):
        emit(Event("staged", "b-2"))
    assert heard == ["staged"]
    assert "an observer of" in caplog.text and "observer bug" in caplog.text


def test_an_observer_that_ends_the_run_ends_it() -> None:
    class Crash(BaseException):
        pass

    def crash(event: Event) -> None:
        raise Crash

    with observing(crash), pytest.raises(Crash):
        emit(Event("published", "b-3"))


def test_only_observers_registered_for_the_tasks_are_shipped_to_them() -> None:
    def driver(event: Event) -> None: ...
    def tasks(event: Event) -> None: ...

    observe(driver)
    observe(tasks, in_tasks=True)
    try:
        assert tasks in task_observers() and driver not in task_observers()
    finally:
        forget(driver)
        forget(tasks)
    assert tasks not in task_observers()


def test_an_event_goes_only_to_the_observers_named() -> None:
    heard: list[str] = []
    with observing(lambda event: heard.append("registered")):
        emit(Event("reading", "b-4", "shardId-0"), to=[lambda event: heard.append(f"named {event.shard_id}")])
    assert heard == ["named shardId-0"]


def test_the_run_steps_are_in_the_order_a_run_takes_them() -> None:
    assert RUN_STEPS[0] == "prepared" and RUN_STEPS[-2:] == ("published", "committed")
    assert RUN_STEPS.index("staged") < RUN_STEPS.index("table_published") < RUN_STEPS.index("published")
    assert set(RUN_STEPS) <= set(STEPS) and len(set(STEPS)) == len(STEPS)
