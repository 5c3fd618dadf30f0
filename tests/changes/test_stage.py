"""The changes stage's reading of --sequence-by: what orders a key's changes, and what a value
that orders nothing says it is."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.changes.stage import ChangeStage, sequence_value


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


def test_a_record_one_of_whose_rows_is_refused_keeps_none_of_its_rows() -> None:
    stage = ChangeStage(ChangeSettings.parse("upsert", key="id", sequence_by="v"))  # type: ignore[arg-type]
    # Rows 0 and 1 are record 7's (the first has no key), row 2 is record 8's.
    columns = [pa.array([None, 3, 4], pa.int64()), pa.array([1, 1, 2], pa.int64())]
    marked = stage.mark([7, 7, 8], ["id", "v"], columns, None)
    assert marked.kept == [2] and marked.ops == ["upsert"] and marked.positions == [[2]]
    assert [(r.position, r.kind) for r in marked.rejects] == [(7, "no key")]
