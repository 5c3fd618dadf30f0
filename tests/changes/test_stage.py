"""The changes stage's reading of --sequence-by: what orders a key's changes, and what a value
that orders nothing says it is."""

from __future__ import annotations

import pytest

from kinesis_batch.changes.stage import sequence_value


@pytest.mark.parametrize(
    ("value", "order"),
    [(7, 7), ("7", 7), (" -12 ", -12), ("2026-11-25T10:00:01Z", 1_795_600_801_000_000)],
)
def test_a_sequence_value_is_a_whole_number_also_written_as_text_or_a_time(value: object, order: int) -> None:
    assert sequence_value(value, "ts") == order


@pytest.mark.parametrize(("value", "said"), [("1.5", "'1.5': neither"), (None, "missing or null"), ("soon", "'soon'")])
def test_a_sequence_value_that_orders_nothing_says_what_it_is(value: object, said: str) -> None:
    with pytest.raises(Exception) as raised:
        sequence_value(value, "ts")
    assert said in str(raised.value), raised.value
