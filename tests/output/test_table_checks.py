"""The one-line checks before a table is written: an existing table has the columns the run's
rows need (raw rows, dead letters, decoded rows, a table of current state), or one line says
what differs; a decoded table is told the fields it still has to get."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kinesis_batch.columns import CHANGE_POSITION, DEAD_LETTERS, RAW, Columns, decoded
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.output.table_checks import check_schema

WHAT = "delta table s3://lake/orders"
DECODED = decoded(pa.schema([("id", pa.int64()), ("name", pa.string())]))


def made_for(columns: Columns) -> pa.Schema:
    return columns.schema(batch_column=True)


def test_a_table_made_for_the_rows_needs_nothing() -> None:
    for columns in (RAW, DEAD_LETTERS, DECODED):
        assert check_schema(made_for(columns), WHAT, columns) == []


def test_a_decoded_table_is_told_the_declared_fields_it_lacks_and_keeps_its_own() -> None:
    theirs = made_for(decoded(pa.schema([("id", pa.int64()), ("extra", pa.float64())])))
    assert [field.name for field in check_schema(theirs, WHAT, DECODED)] == ["name"]


@pytest.mark.parametrize(
    ("actual", "columns", "said"),
    [
        (made_for(RAW).remove(0), RAW, "exists with other columns than kinesis-batch writes (shard_id is missing)"),
        (made_for(RAW).append(pa.field("x", pa.int8())), RAW, "unexpected column(s) x"),
        (made_for(DEAD_LETTERS), RAW, "exists with other columns than kinesis-batch writes"),
        (
            made_for(RAW),
            DECODED,
            "holds raw rows (a data column of record bytes); decoded rows need a table of their own",
        ),
        (made_for(decoded(pa.schema([("id", pa.string())]))), DECODED, "conflict with the decoded rows (id"),
        (
            made_for(Columns(fields=pa.schema([("id", pa.int64())]), changes=True)),
            DECODED,
            "is a table of current state",
        ),
    ],
)
def test_a_table_of_other_columns_is_one_line_saying_what_differs(
    actual: pa.Schema, columns: Columns, said: str
) -> None:
    with pytest.raises(InvalidStateError) as caught:
        check_schema(actual, WHAT, columns)
    line = str(caught.value)
    assert line.startswith(WHAT) and said in line and "\n" not in line


def test_the_partition_column_a_layout_derives_is_not_asked_of_the_files() -> None:
    day = pa.field("day", pa.date32())
    assert check_schema(made_for(RAW).append(day), WHAT, RAW, derived="day") == []
    with pytest.raises(InvalidStateError, match="unexpected column"):
        check_schema(made_for(RAW).append(day), WHAT, RAW)


def test_a_table_of_current_state_takes_changes() -> None:
    changes = Columns(fields=DECODED.fields, changes=True)
    assert CHANGE_POSITION.name in made_for(changes).names
    assert check_schema(made_for(changes), WHAT, changes) == []
