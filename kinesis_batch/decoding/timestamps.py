"""Times as producers write them, into timestamp columns (where the schema says a field is one).

- ISO 8601 text: ``2026-11-25T10:00:00Z``, with an offset, or without one (then UTC); a date
  alone is midnight UTC.
- Epoch numbers, by magnitude: below 1e11 seconds (until the year 5138), below 1e14
  milliseconds, above that microseconds. Fractions are kept to the microsecond. A number whose
  moment is before the year 1 or after 9999 (Python's own range, so every reader's) is no time.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc

MICROS = pa.timestamp("us", tz="UTC")
SECONDS_BELOW, MILLIS_BELOW = 1e11, 1e14
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The first and last moment a timestamp holds here, in epoch microseconds: years 1 to 9999.
FIRST_MICROS = (datetime.min.replace(tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1)
LAST_MICROS = (datetime.max.replace(tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1)


def from_epoch(numbers: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Epoch seconds, milliseconds or microseconds (by magnitude) as UTC microsecond timestamps;
    also the mask of numbers that are no time (out of range, not a number: null here)."""
    if pa.types.is_integer(numbers.type):  # in integers: a float64 holds them exactly only to 2**53
        micros = _integer_micros(numbers)
    else:
        values = numbers.cast(pa.float64())
        size = pc.abs(values)
        scale = pc.if_else(pc.less(size, SECONDS_BELOW), 1e6, pc.if_else(pc.less(size, MILLIS_BELOW), 1e3, 1.0))
        micros = pc.round(pc.multiply(values, scale))
    first, last = (pa.scalar(bound).cast(micros.type, safe=False) for bound in (FIRST_MICROS, LAST_MICROS))
    within = pc.and_(pc.greater_equal(micros, first), pc.less_equal(micros, last))
    bad = pc.fill_null(pc.invert(within), False)  # (NaN compares false: out)
    kept = pc.if_else(bad, pa.scalar(None, micros.type), micros)
    return kept.cast(pa.int64()).cast(MICROS), bad


def _integer_micros(numbers: pa.Array) -> pa.Array:
    """Integers as epoch microseconds in int64, by magnitude; one past the range stays past it."""
    if numbers.type == pa.uint64():  # above int64's range: past any time
        numbers = pc.min_element_wise(numbers, pa.scalar(LAST_MICROS + 1, pa.uint64()), skip_nulls=False)
    # -2**63 has no absolute value in int64 (it wraps to itself): before any time either way.
    ints = pc.max_element_wise(numbers.cast(pa.int64()), pa.scalar(FIRST_MICROS - 1, pa.int64()), skip_nulls=False)
    seconds, millis = (pc.less(pc.abs(ints), int(bound)) for bound in (SECONDS_BELOW, MILLIS_BELOW))
    # Each product is taken only where it fits (below 1e17); elsewhere it is not chosen.
    return pc.if_else(seconds, pc.multiply(ints, 1_000_000), pc.if_else(millis, pc.multiply(ints, 1000), ints))


def parse_text(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """ISO 8601 text as UTC microsecond timestamps; also the mask of texts that are not times
    (those become null here)."""
    parsed: list[datetime | None] = []
    bad: list[bool] = []
    for text in values.to_pylist():
        moment = None if text is None else _parse(text)
        parsed.append(moment)
        bad.append(text is not None and moment is None)
    return pa.array(parsed, type=MICROS), pa.array(bad, type=pa.bool_())


def parse_dates(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """ISO dates (``2026-11-25``; a time after it is ignored) and the mask of texts that are not."""
    parsed: list[date | None] = []
    bad: list[bool] = []
    for text in values.to_pylist():
        day = None if text is None else to_date(text)
        parsed.append(day)
        bad.append(text is not None and day is None)
    return pa.array(parsed, type=pa.date32()), pa.array(bad, type=pa.bool_())


def to_datetime(value: object) -> datetime | None:
    """One value (ISO 8601 text, epoch number, or a datetime) as an aware UTC datetime; None if
    it is none of these."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        return _parse(value)
    if isinstance(value, int) and not isinstance(value, bool):  # exactly, however large
        whole = abs(value)
        micros = value * 1_000_000 if whole < SECONDS_BELOW else value * 1000 if whole < MILLIS_BELOW else value
        return _EPOCH + timedelta(microseconds=micros) if FIRST_MICROS <= micros <= LAST_MICROS else None
    if isinstance(value, float):
        size = abs(value)
        seconds = value if size < SECONDS_BELOW else value / 1e3 if size < MILLIS_BELOW else value / 1e6
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def to_date(value: object) -> date | None:
    """An ISO date (a time after it is ignored), or a date, as a date; None if it is neither."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def _parse(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


__all__ = ["MICROS", "from_epoch", "parse_dates", "parse_text", "to_date", "to_datetime"]
