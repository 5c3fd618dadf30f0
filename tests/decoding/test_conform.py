"""Fitting decoded rows to a table's schema: each row fits, widens the table where the format
allows it, adds a column, or is rejected with a reason; a field only ever null adds nothing."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch.decoding.conform import align, conform
from kinesis_batch.decoding.scalars import Policy

TS = pa.timestamp("us", tz="UTC")


def fitted(rows: list[dict[str, Any]], table: list[tuple[str, pa.DataType]], policy: Policy | None = None) -> Any:
    result = conform(pa.array(rows), pa.schema(table), policy or Policy())
    values = pa.Table.from_arrays(result.columns, schema=result.schema).to_pylist() if result.columns else []
    bad = {c.kind: c.mask.to_pylist() for c in result.conflicts}
    return result.schema, values, bad


@pytest.mark.parametrize(
    ("rows", "table", "policy", "types", "values", "bad"),
    [
        # integers: exact; a fraction is a changed type; integral floats fit
        ([{"x": 1}, {"x": 2.0}, {"x": 2.5}], [("x", pa.int64())], Policy(), {"x": pa.int64()},
         [1, 2, None], {"type changed": [False, False, True]}),
        # an int32 column that overflows widens where the format can ...
        ([{"x": 2**40}], [("x", pa.int32())], Policy(widen=True), {"x": pa.int64()}, [2**40], {}),
        # ... and where it cannot, those rows are rejected, the others fit
        ([{"x": 2**40}, {"x": 7}], [("x", pa.int32())], Policy(widen=False), {"x": pa.int32()},
         [None, 7], {"out of range": [True, False]}),
        # numbers into a float column; text into a number column is a changed type
        ([{"x": 3}], [("x", pa.float64())], Policy(), {"x": pa.float64()}, [3.0], {}),
        ([{"x": "3"}, {"x": None}], [("x", pa.int64())], Policy(), {"x": pa.int64()},
         [None, None], {"type changed": [True, False]}),
        # an exact float64 source (Avro, Protobuf) widens a float32 column, or is refused
        ([{"x": 1.5}], [("x", pa.float32())], Policy(exact=True), {"x": pa.float64()}, [1.5], {}),
        ([{"x": 1.5}], [("x", pa.float32())], Policy(exact=True, widen=False), {"x": pa.float32()},
         [None], {"type changed": [True]}),
        # a JSON number into a float32 column is just a number
        ([{"x": 1.5}], [("x", pa.float32())], Policy(), {"x": pa.float32()}, [1.5], {}),
        # times: ISO text and epoch seconds or millis; text that is no time is rejected
        ([{"t": "2026-11-25T10:00:00Z"}, {"t": "yesterday"}], [("t", TS)], Policy(), {"t": TS},
         [datetime(2026, 11, 25, 10, tzinfo=UTC), None], {"not a time": [False, True]}),
        ([{"t": 1795600800}, {"t": 1795600800123}], [("t", TS)], Policy(), {"t": TS},
         [datetime(2026, 11, 25, 10, tzinfo=UTC), datetime(2026, 11, 25, 10, 0, 0, 123000, tzinfo=UTC)], {}),
        # epoch numbers past 2**53 are exact; a number whose moment is past the year 9999 is no time
        # (either once failed the whole page: tests/decoding/test_timestamps.py)
        ([{"t": 9025257600000000}, {"t": 2**63 - 1}], [("t", TS)], Policy(exact=True), {"t": TS},
         [datetime(2256, 1, 1, tzinfo=UTC), None], {"not a time": [False, True]}),
        ([{"t": 1e300}], [("t", TS)], Policy(exact=True), {"t": TS}, [None], {"not a time": [True]}),
        ([{"d": "2026-11-25"}], [("d", pa.date32())], Policy(), {"d": pa.date32()}, [date(2026, 11, 25)], {}),
        # an object into a map column: its fields are the entries
        ([{"m": {"a": "1", "b": "2"}}], [("m", pa.map_(pa.string(), pa.string()))], Policy(),
         {"m": pa.map_(pa.string(), pa.string())}, [[("a", "1"), ("b", "2")]], {}),
    ],
)  # fmt: skip
def test_a_column_fits_widens_or_rejects_the_rows_that_do_not_fit(
    rows: list[dict[str, Any]],
    table: list[tuple[str, pa.DataType]],
    policy: Policy,
    types: dict[str, pa.DataType],
    values: list[Any],
    bad: dict[str, list[bool]],
) -> None:
    schema, got, conflicts = fitted(rows, table, policy)
    assert {field.name: field.type for field in schema} == types
    (name,) = types
    assert [row[name] for row in got] == values
    assert conflicts == bad


def test_a_new_field_is_a_new_column_at_the_end_and_nested_fields_join_their_struct() -> None:
    rows = [{"a": 1, "user": {"id": 7}}, {"a": 2, "user": {"id": 8, "name": "n"}, "tags": ["x"]}]
    schema, values, bad = fitted(rows, [("a", pa.int64()), ("user", pa.struct([("id", pa.int64())]))])
    assert schema.names == ["a", "user", "tags"] and not bad
    assert schema.field("user").type == pa.struct([("id", pa.int64()), ("name", pa.string())])
    assert values[0]["user"] == {"id": 7, "name": None} and values[1]["tags"] == ["x"]


def test_with_schema_evolution_fail_a_new_field_rejects_the_rows_that_have_one() -> None:
    rows = [{"a": 1}, {"a": 2, "extra": "x"}, {"a": 3, "user": {"id": 1, "new": True}}]
    table = pa.schema([("a", pa.int64()), ("user", pa.struct([("id", pa.int64())]))])
    result = conform(pa.array(rows), table, Policy(add_columns=False))
    assert result.schema.names == ["a", "user"]
    assert {c.kind for c in result.conflicts} == {"new field"}
    rejected = [any(c.mask.to_pylist()[i] for c in result.conflicts) for i in range(3)]
    assert rejected == [False, True, True]


@pytest.mark.parametrize(
    "rows",
    [
        [{"a": 1, "gone": None}],  # only ever null
        [{"a": 1, "gone": []}],  # only ever an empty list
        [{"a": 1, "gone": {}}],  # only ever an empty object
        [{"a": 1, "gone": {"inner": None}}],  # an object of nulls
    ],
)
def test_a_field_without_a_value_yet_adds_no_column(rows: list[dict[str, Any]]) -> None:
    schema, _, bad = fitted(rows, [("a", pa.int64())])
    assert schema.names == ["a"] and not bad


def test_an_empty_list_or_object_is_empty_in_its_column_and_refused_by_any_other() -> None:
    _, values, bad = fitted(
        [{"xs": [], "o": {}, "b": None}, {"xs": None, "o": None, "b": {}}],
        [("xs", pa.list_(pa.int64())), ("o", pa.struct([("a", pa.int64())])), ("b", pa.bool_())],
    )
    assert values[0] == {"xs": [], "o": {"a": None}, "b": None}, "empty, as the page beside a value makes them"
    assert bad == {"type changed": [False, True]}


def test_a_new_field_whose_only_values_were_in_rejected_rows_adds_no_column() -> None:
    rows = pa.array(
        [{"a": 1, "new": None}, {"a": 2, "new": None}], type=pa.struct([("a", pa.int64()), ("new", pa.bool_())])
    )
    result = conform(rows, pa.schema([("a", pa.int64())]), Policy())
    assert result.schema.names == ["a"] and not result.conflicts


def test_a_list_item_that_does_not_fit_rejects_the_row_that_holds_it() -> None:
    rows = [{"xs": [1, 2]}, {"xs": [3, 4.5]}, {"xs": None}]
    schema, values, bad = fitted(rows, [("xs", pa.list_(pa.int64()))])
    assert schema.field("xs").type == pa.list_(pa.int64())
    assert bad == {"type changed": [False, True, False]}
    assert values[0]["xs"] == [1, 2] and values[2]["xs"] is None


def test_rows_fitted_to_an_earlier_schema_align_with_the_grown_one() -> None:
    first = conform(pa.array([{"a": 1}]), pa.schema([]), Policy())
    grown = pa.schema([("a", pa.int64()), ("b", pa.string())])
    aligned = align(first.columns, first.schema, grown)
    assert pa.Table.from_arrays(aligned, schema=grown).to_pylist() == [{"a": 1, "b": None}]
