"""The one rule that orders a key's changes: the source's position element by element, then the
Kinesis part, sequence numbers compared as integers (never as text); drawn against a plain sort."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.changes.model import EnvelopeError, order, to_datetime

CHANGES = st.tuples(
    st.none() | st.lists(st.integers(0, 10**12), min_size=1, max_size=3).map(tuple),
    st.integers(0, 5),
    st.integers(0, 10**56),
    st.integers(0, 10),
)


@given(st.lists(CHANGES, min_size=2, max_size=20))
def test_changes_sort_by_position_then_depth_then_sequence_as_integers(changes: list[tuple]) -> None:  # type: ignore[type-arg]
    keys = [order(position, depth, str(sequence), sub) for position, depth, sequence, sub in changes]
    expected = sorted(changes, key=lambda c: (list(c[0] or []), c[1], c[2], c[3]))
    got = [changes[i] for i in sorted(range(len(changes)), key=lambda i: keys[i])]
    assert [(tuple(p or ()), d, s, u) for p, d, s, u in got] == [(tuple(p or ()), d, s, u) for p, d, s, u in expected]


def test_a_longer_sequence_number_is_later_although_its_text_sorts_first() -> None:
    assert order(None, 0, "9", 0) < order(None, 0, "10", 0)
    assert order((1,), 9, "99", 9) < order((2,), 0, "1", 0), "the source's position first"
    assert order((5, 1), 0, "1", 0) < order((5, 2), 0, "1", 0), "a position's parts element by element"


def test_times_without_a_zone_are_utc_and_others_are_none() -> None:
    assert to_datetime("2026-11-25T10:00:00") == datetime(2026, 11, 25, 10, tzinfo=UTC)
    paris = datetime(2026, 11, 25, 11, tzinfo=timezone(timedelta(hours=1)))
    assert to_datetime(paris.isoformat()) == paris and to_datetime(datetime(2026, 1, 1)).tzinfo is UTC  # type: ignore[union-attr]
    assert to_datetime("soon") is None and to_datetime(1764064800) is None


def test_an_envelope_error_says_its_kind_then_what() -> None:
    error = EnvelopeError("no key", "Keys is missing")
    assert str(error) == "no key: Keys is missing" and (error.kind, error.detail) == ("no key", "Keys is missing")
