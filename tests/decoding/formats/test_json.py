"""JSON records into rows: an object is a row, an array of objects a row each; anything else is
rejected with the reason; records that disagree with each other are sorted out one by one; the
table's time fields are converted from ISO text or epoch numbers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch.decoding.formats.json import JsonDecoder

TS = pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize(
    ("payload", "rows", "reason"),
    [
        (b'{"a": 1, "b": {"c": [1, 2]}}', [{"a": 1, "b": {"c": [1, 2]}}], None),
        (b'[{"a": 1}, {"a": 2}]', [{"a": 1}, {"a": 2}], None),
        (b"[]", [], None),  # no row: counted as filtered out, not as a dead letter
        (b'{"a": 9007199254740993}', [{"a": 9007199254740993}], None),  # 64-bit integers stay exact
        (b"{broken", [], "decode: not JSON"),
        (b"42", [], "decode: not a JSON object"),
        (b'[{"a": 1}, "x"]', [], "decode: not a JSON object"),
        (b'{"a": 99999999999999999999}', [], "decode: unreadable value"),
    ],
)
def test_each_record_is_rows_or_one_reason(payload: bytes, rows: list[dict[str, Any]], reason: str | None) -> None:
    decoded = JsonDecoder().decode([payload])
    assert decoded.values.to_pylist() == rows
    assert [f"{r.stage}: {r.kind}" for r in decoded.rejects] == ([reason] if reason else [])


def test_records_that_disagree_keep_the_first_type_and_the_rest_is_rejected_naming_the_field() -> None:
    decoded = JsonDecoder().decode([b'{"a": 1, "n": {"x": 1}}', b'{"a": 2, "n": {"x": "text"}}', b'{"a": 3}'])
    assert decoded.values.to_pylist() == [{"a": 1, "n": {"x": 1}}, {"a": 3, "n": None}]
    assert list(decoded.positions) == [0, 2]
    (reject,) = decoded.rejects
    assert (reject.position, reject.stage, reject.kind) == (1, "schema", "type changed")
    assert "n.x is string" in reject.detail


@pytest.mark.parametrize(
    ("payloads", "rows", "reasons"),
    [
        ([b'{"a": "x"}', b'{"a": []}'], [{"a": "x"}], ["schema: type changed"]),
        ([b'{"n": []}', b'{"n": {"id": false}}'], [{"n": []}], ["schema: type changed"]),
        ([b'{"x": 0.5}', b'{"x": 9007199254740993}'], [{"x": 0.5}], ["decode: unreadable value"]),
        ([b'{"s": "\xff"}', b'{"s": "ok"}'], [{"s": "ok"}], ["decode: not JSON"]),
    ],
    ids=["empty-list-for-text", "empty-list-then-object", "past-2**53-among-floats", "not-utf-8"],
)
def test_a_record_that_cannot_join_the_page_is_a_dead_letter_not_a_failed_page(
    payloads: list[bytes], rows: list[dict[str, Any]], reasons: list[str]
) -> None:
    # Each of these failed the whole page (and so the run) before: an exception, not a dead letter.
    decoded = JsonDecoder().decode(payloads)
    assert decoded.values.to_pylist() == rows
    assert [f"{r.stage}: {r.kind}" for r in decoded.rejects] == reasons


def test_the_tables_types_decide_which_records_changed_theirs() -> None:
    decoder = JsonDecoder(pa.schema([("a", pa.string())]))
    decoded = decoder.decode([b'{"a": 1}', b'{"a": "text"}', b'{"a": true}'])
    assert decoded.values.to_pylist() == [{"a": "text"}]
    assert sorted(r.position for r in decoded.rejects) == [0, 2]


def test_the_tables_time_fields_take_iso_text_and_epoch_numbers() -> None:
    decoder = JsonDecoder(pa.schema([("at", TS), ("user", pa.struct([("since", pa.date32())]))]))
    decoded = decoder.decode(
        [
            b'{"at": "2026-11-25T10:00:00+01:00"}',
            b'{"at": 1795600800, "user": {"since": "2026-01-02"}}',
            b'{"at": "soon"}',
        ]
    )
    at = [row["at"] for row in decoded.values.to_pylist()]
    assert at == [datetime(2026, 11, 25, 9, tzinfo=UTC), datetime(2026, 11, 25, 10, tzinfo=UTC)]
    (reject,) = decoded.rejects
    assert (reject.position, reject.kind) == (2, "not a time") and "'soon'" in reject.detail


def test_a_new_fields_type_is_what_most_records_say_not_the_first_one() -> None:
    decoded = JsonDecoder().decode([b'{"id": "x1"}', b'{"id": 2}', b'{"id": 3}', b'{"id": 4}'])
    assert decoded.values.to_pylist() == [{"id": 2}, {"id": 3}, {"id": 4}]
    assert [(r.position, r.kind) for r in decoded.rejects] == [(0, "type changed")]


@pytest.mark.parametrize(
    ("table", "page", "rows", "rejected"),
    [
        # a whole number beside a fraction is still an integer column's: the fraction alone is refused
        ([("i", pa.int64())], [{"i": 2**63 - 1}, {"i": 2.0}, {"i": 0.5}], [2**63 - 1, 2], [2]),
        # an integer in a floating column is its nearest double, whatever its neighbours
        ([("f", pa.float64())], [{"f": 2**53 + 1}, {"f": 0.5}], [float(2**53), 0.5], []),
        # Arrow's inference would make the false a 0.0 beside a double: it is a bool, or refused
        ([("b", pa.bool_())], [{"b": False}, {"b": 0.5}], [False], [1]),
        ([], [{"n": False}, {"n": 0.5}, {"n": True}], [False, True], [1]),
    ],
)
def test_a_columns_type_is_the_tables_or_the_pages_never_a_neighbours_coercion(
    table: list[tuple[str, pa.DataType]], page: list[dict[str, Any]], rows: list[Any], rejected: list[int]
) -> None:
    import json

    decoded = JsonDecoder(pa.schema(table)).decode([json.dumps(row).encode() for row in page])
    assert [next(iter(row.values())) for row in decoded.values.to_pylist()] == rows
    assert [r.position for r in decoded.rejects] == rejected


def test_a_record_that_cannot_join_the_page_types_none_of_its_columns() -> None:
    # Its first row alone would make b an integer column, and the second record a dead letter.
    decoded = JsonDecoder(pa.schema([("b", pa.bool_())])).decode([b'[{"b": 0}, {"b": false}]', b'{"b": true}'])
    assert decoded.values.to_pylist() == [{"b": True}] and [r.position for r in decoded.rejects] == [0]


def test_an_integer_past_int64_is_named_with_its_field() -> None:
    (reject,) = JsonDecoder().decode([b'{"o": {"x": [1, -99999999999999999999]}}']).rejects
    assert (reject.kind, reject.detail) == ("unreadable value", "o.x[] is -99999999999999999999, past int64")
