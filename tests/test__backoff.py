"""Bounded exponential backoff with full jitter: each wait is a random share of a bound that
doubles from ``base`` up to ``cap``, drawn against a plain formula."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch._backoff import Backoff


@given(
    base=st.floats(0.001, 2.0),
    cap=st.floats(0.001, 60.0),
    attempt=st.integers(1, 80),
    share=st.floats(0.0, 1.0, exclude_max=True),
)
def test_each_wait_is_a_random_share_of_a_doubling_capped_bound(
    base: float, cap: float, attempt: int, share: float
) -> None:
    bound = min(cap, base * 2 ** (attempt - 1))
    waited = Backoff(base, cap).delay(attempt, rand=lambda: share)
    assert 0.0 <= waited <= bound
    assert waited == share * bound


def test_the_bound_doubles_until_the_cap() -> None:
    backoff = Backoff(base=0.5, cap=3.0)
    assert [backoff.delay(n, rand=lambda: 1.0) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_sleep_waits_the_drawn_delay() -> None:
    slept: list[float] = []
    Backoff(base=1.0, cap=1.0).sleep(4, sleep=slept.append)
    assert len(slept) == 1 and 0.0 <= slept[0] <= 1.0


def test_a_fixed_jitter_makes_every_wait_its_growths_longest() -> None:
    longest = Backoff(base=0.5, cap=2.0, jitter=lambda: 1.0)
    assert [longest.delay(attempt) for attempt in range(1, 6)] == [0.5, 1.0, 2.0, 2.0, 2.0]
    assert longest.delay(1, rand=lambda: 0.5) == 0.25  # a share given with the call wins
    assert longest == Backoff(base=0.5, cap=2.0)  # the jitter is no part of what a backoff is
