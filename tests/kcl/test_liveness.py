"""A KCL application is taken as stopped only when no leaseCounter moves for the whole window."""

from __future__ import annotations

import pytest

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.kcl.liveness import ensure_stopped
from tests.faults import FakeClock


def test_counters_that_stay_put_for_the_window_are_a_stopped_application() -> None:
    clock = FakeClock()
    seen = ensure_stopped(lambda: {"shardId-0": 7, "shardId-1": 3}, "app", seconds=30, clock=clock, sleep=clock.sleep)
    assert seen == {"shardId-0": 7, "shardId-1": 3}
    assert clock.now >= 1_030  # watched the whole window


@pytest.mark.parametrize(
    ("later", "says"),
    [
        ({"shardId-0": 8, "shardId-1": 3}, "the leaseCounter of shardId-0 went from 7 to 8 within 30 s"),
        ({"shardId-0": 7, "shardId-1": 3, "shardId-2": 0}, "the leaseCounter of shardId-2 went from None to 0"),
    ],
    ids=["a renewal", "a new lease"],
)
def test_a_counter_that_moves_while_watched_is_a_running_application(later: dict[str, int], says: str) -> None:
    clock = FakeClock()
    calls = iter([{"shardId-0": 7, "shardId-1": 3}, {"shardId-0": 7, "shardId-1": 3}, later])

    with pytest.raises(InvalidStateError, match=says):
        ensure_stopped(lambda: next(calls), "app", seconds=30, clock=clock, sleep=clock.sleep)
