"""Times as producers write them: ISO 8601 text (an offset, or none: UTC) and epoch numbers by
magnitude (seconds, milliseconds, microseconds), drawn against datetime's own arithmetic."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.decoding.timestamps import MICROS, from_epoch, parse_dates, parse_text, to_date, to_datetime

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Moments every scale can write: after 1973 (below it, milliseconds would read as seconds)
#: and before 5138 (past it, seconds would read as milliseconds).
MOMENTS = st.datetimes(datetime(1974, 1, 1), datetime(2999, 12, 31), timezones=st.just(UTC))
OFFSETS = st.integers(-14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))


def micros(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


@given(MOMENTS)
def test_epoch_numbers_are_read_by_their_magnitude(moment: datetime) -> None:
    exact = micros(moment)
    whole = moment.replace(microsecond=0)
    numbers = pa.array([exact // 1_000_000, exact // 1000, exact], pa.int64())
    got, bad = from_epoch(numbers)
    assert got.to_pylist() == [whole, moment.replace(microsecond=moment.microsecond // 1000 * 1000), moment]
    assert bad.to_pylist() == [False, False, False]
    assert to_datetime(exact // 1_000_000) == whole and to_datetime(exact) == moment


@given(MOMENTS, OFFSETS)
def test_iso_text_with_an_offset_is_that_moment_in_utc(moment: datetime, offset: timezone) -> None:
    text = moment.astimezone(offset).isoformat()
    parsed, bad = parse_text(pa.array([text, moment.replace(tzinfo=None).isoformat(), None]))
    assert parsed.to_pylist() == [moment, moment, None], "without an offset, a time is UTC"
    assert bad.to_pylist() == [False, False, False]
    assert parsed.type == MICROS


def test_seconds_with_a_fraction_are_kept_to_the_microsecond() -> None:
    got, _ = from_epoch(pa.array([1764064800.123456, 1764064800123.456], pa.float64()))
    assert got.to_pylist() == [datetime(2025, 11, 25, 10, 0, 0, 123456, tzinfo=UTC)] * 2


def test_a_number_whose_moment_is_outside_the_years_1_to_9999_is_no_time() -> None:
    """Found by the draw above: microseconds past 2255 (above 2**53) failed the whole page."""
    numbers = [2**63 - 1, -(2**63), 10**18, 2**53 + 1, 9_025_257_600_000_000]
    got, bad = from_epoch(pa.array(numbers, pa.int64()))
    assert bad.to_pylist() == [True, True, True, False, False]
    assert got.to_pylist()[:3] == [None, None, None]
    assert got.to_pylist()[3:] == [EPOCH + timedelta(microseconds=2**53 + 1), datetime(2256, 1, 1, tzinfo=UTC)]
    huge, bad = from_epoch(pa.array([2**64 - 1, None], pa.uint64()))
    assert huge.to_pylist() == [None, None] and bad.to_pylist() == [True, False]
    floats, bad = from_epoch(pa.array([1e300, float("nan"), float("inf"), -1e300], pa.float64()))
    assert floats.null_count == 4 and bad.to_pylist() == [True, True, True, True]


def test_text_that_is_no_time_is_null_and_marked() -> None:
    parsed, bad = parse_text(pa.array(["soon", "2026-13-01T00:00:00", "2026-11-25"]))
    assert parsed.to_pylist() == [None, None, datetime(2026, 11, 25, tzinfo=UTC)]  # a date alone: midnight UTC
    assert bad.to_pylist() == [True, True, False]


def test_dates_ignore_a_time_after_them_and_mark_what_is_not_one() -> None:
    days, bad = parse_dates(pa.array(["2026-11-25T23:59:59+05:00", "tomorrow", None]))
    assert days.to_pylist() == [date(2026, 11, 25), None, None] and bad.to_pylist() == [False, True, False]
    assert to_date(datetime(2026, 1, 2, 3, tzinfo=UTC)) == date(2026, 1, 2) and to_date(7) is None


def test_values_that_are_no_time_are_none() -> None:
    assert to_datetime(True) is None, "a boolean is not an epoch number"
    assert to_datetime(10**30) is None and to_datetime([1]) is None and to_datetime("later") is None
    naive = datetime(2026, 11, 25, 10)
    assert to_datetime(naive) == naive.replace(tzinfo=UTC)
