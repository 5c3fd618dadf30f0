"""A JSON page read whole gives the rows and dead letters that reading it record by record gives:
pages of random records (objects of every JSON type, times as text and as numbers, integers at
and past int64, floats at their limits, bare dates, long digit strings) and of records that are
not one object on a line (empty, arrays, NaN, two objects, a key twice, a line break, bytes that
are not UTF-8), into tables declared with every kind of column, page after page."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kinesis_batch.decoding import timestamps
from kinesis_batch.decoding.formats.json import JsonDecoder
from kinesis_batch.decoding.formats.json_pages import read_page
from kinesis_batch.decoding.pipeline import Page, Pipeline
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.routing.routes import SINGLE
from kinesis_batch.shards.model import Record

MICROS = pa.timestamp("us", tz="UTC")
#: The declared columns a table may have (a page's records use the same names).
COLUMNS = {
    "n": pa.int64(),
    "small": pa.int32(),
    "x": pa.float64(),
    "f": pa.float32(),
    "s": pa.string(),
    "ok": pa.bool_(),
    "at": MICROS,
    "day": pa.date32(),
    "ids": pa.list_(pa.int64()),
    "inner": pa.struct([("id", pa.int64()), ("at", MICROS), ("tag", pa.string())]),
}
NAMES = [*COLUMNS, "new", "more"]

times = st.sampled_from(["2026-11-25T10:00:00Z", "2026-11-25T10:00:00.123+02:00", "2026-11-25", "2026-11-25 10:00"])
integers = st.one_of(
    st.integers(-1000, 1000),
    st.sampled_from([2**53 + 1, 2**63 - 1, -(2**63), 2**63, 2**64, 10**18, 10**19, -(10**19)]),
)
floats = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.1, -0.0, 1e308, 5e-324, 2.2250738585072011e-308, 12.50, 1e16]),
)
texts = st.one_of(st.text(max_size=8), times, st.sampled_from(["1234567890123456789012", '\u00e9\n\t"', ""]))
scalars = st.one_of(st.none(), st.booleans(), integers, floats, texts)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["id", "at", "tag", "z"]), inner, max_size=3)
    ),
    max_leaves=6,
)
objects = st.dictionaries(st.sampled_from(NAMES), values, max_size=6)
#: Records that are not one JSON object on a line, or that pyarrow's reader reads otherwise.
ODD = [b"", b"  ", b"[]", b'[{"n": 1}]', b'{"n": NaN}', b'{"n": 1}{"n": 2}', b'{"n": 1, "n": 2}', b'{\n"n": 1}']
ODD += [b'{"s": "\xff"}', b"7", b'{"s": "\\ud800"}', b'{"n": 1}\r', b"\xef\xbb\xbf{}"]


def encoded(value: dict[str, Any], spaced: bool) -> bytes:
    return json.dumps(value, separators=(", ", ": ") if spaced else (",", ":"), ensure_ascii=spaced).encode()


one_line_objects = st.builds(encoded, objects, st.booleans())
payloads = st.one_of(one_line_objects, one_line_objects, one_line_objects, st.sampled_from(ODD))  # 3 in 4 objects
tables = st.lists(st.sampled_from(list(COLUMNS)), unique=True, max_size=len(COLUMNS))


def records(page: list[bytes]) -> list[Record]:
    at = datetime(2026, 11, 25, tzinfo=UTC)
    return [Record("shardId-1", str(10**30 + i), 0, f"k{i}", data, at) for i, data in enumerate(page)]


def pipelines(declared: list[str]) -> tuple[Pipeline, Pipeline]:
    """The same pipeline twice, the second reading every page record by record."""
    spec = DecodeSpec(DecodeSettings(decode="json"), declared=pa.schema([(name, COLUMNS[name]) for name in declared]))
    whole, each = (Pipeline(spec, shard_id="shardId-1", depth=0, batch_id="b") for _ in range(2))
    each.decoder = JsonDecoder(spec.starting_fields(), whole_pages=False)
    return whole, each


def same(one: Page, other: Page) -> None:
    for name in ("rows", "dead"):
        a, b = getattr(one, name), getattr(other, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.schema == b.schema, f"{name}: {a.schema} != {b.schema}"
            assert a.to_pylist() == b.to_pylist(), name


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(declared=tables, pages=st.lists(st.lists(payloads, min_size=1, max_size=8), min_size=1, max_size=3))
@example(declared=["at", "inner"], pages=[[b'{"at": "2026-11-25T10:00:00Z", "inner": {"at": "2026-11-25"}}']])
@example(declared=["x"], pages=[[b'{"x": 1}', b'{"x": 9007199254740993}'], [b'{"x": 1.5, "new": "2026-11-25"}']])
@example(declared=[], pages=[[b'{"new": 9007199254740993}', b'{"new": 0.0}']])  # rounded by the reader
def test_a_page_read_whole_lands_the_rows_and_dead_letters_of_one_read_record_by_record(
    declared: list[str], pages: list[list[bytes]]
) -> None:
    whole, each = pipelines(declared)
    for page in pages:  # in order: what a page adds to the table, the next one is fitted to
        same(whole.page(records(page)), each.page(records(page)))
        assert whole.fields_of(SINGLE) == each.fields_of(SINGLE)


#: A table of an integer and a time, as JsonDecoder hands it to read_page.
KNOWN, TIMES = pa.struct([("n", pa.int64()), ("at", MICROS)]), [(("at",), timestamps.to_datetime)]


def test_a_page_of_plain_objects_is_read_whole_in_one_call() -> None:
    page = [b'{"n": 1, "at": "2026-11-25T10:00:00Z", "new": [1.5]}', b'{"n": 2}']
    values = read_page(page, KNOWN, TIMES)
    assert values is not None
    assert values.to_pylist() == [
        {"n": 1, "at": datetime(2026, 11, 25, 10, tzinfo=UTC), "new": [1.5]},
        {"n": 2, "at": None, "new": None},
    ]


@pytest.mark.parametrize(
    "page",
    [
        [b'{"n": 1}', b""],
        [b'{"n": 1}{"n": 2}', b'{"n": 3}'],
        [b'{"n": NaN}'],
        [b'{"n": 12345678901234567890}'],
        [b'{"new": 9007199254740993}', b'{"new": 0.5}'],
        [b'{"n": "1"}'],
        [b'{"at": "noon"}'],
        [b'{"at": 1700000000}'],
        [b'{"d": "2026-11-25"}'],
        [b'[{"n": 1}]'],
        [b'{"n": 1,\n"at": null}'],
    ],
    ids=[
        *("empty", "two-objects", "nan", "past-int64", "past-2**53-among-floats", "text-for-int"),
        *("not-a-time", "epoch", "bare-date", "array", "newline"),
    ],
)
def test_a_page_read_otherwise_is_left_to_the_record_by_record_way(page: list[bytes]) -> None:
    assert read_page(page, KNOWN, TIMES) is None
