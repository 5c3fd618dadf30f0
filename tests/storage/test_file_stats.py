"""A Parquet file's column statistics as Delta's add actions state them: every bound stated is a
true bound of the file's values, across row groups, with text and times cut as readers need."""

from __future__ import annotations

import io
import json
import random
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kinesis_batch.storage.file_stats import TEXT_CHARS, column_stats, delta_stats

pytestmark = pytest.mark.contract("tables", why="Parquet statistics as this pyarrow writes them")

T0 = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)


def stats_of(*groups: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
    """The statistics of a file written a row group per ``groups``."""
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, schema) as writer:
        for group in groups:
            writer.write_table(pa.table(group, schema=schema))
    text = column_stats(pq.read_metadata(io.BytesIO(sink.getvalue())))
    assert text is not None
    return dict(json.loads(text))


def test_bounds_and_null_counts_span_every_row_group() -> None:
    schema = pa.schema(
        [("n", pa.int64()), ("x", pa.float64()), ("s", pa.string()), ("d", pa.date32()), ("flag", pa.bool_())]
    )
    first = {"n": [5, None], "x": [1.5, 2.0], "s": ["b", "c"], "d": [date(2026, 1, 2), None], "flag": [True, None]}
    second = {"n": [-3, 9], "x": [None, -0.5], "s": ["a", None], "d": [date(2025, 12, 31), None], "flag": [False, None]}
    found = stats_of(first, second, schema=schema)
    assert found["minValues"] == {"n": -3, "x": -0.5, "s": "a", "d": "2025-12-31"}
    assert found["maxValues"] == {"n": 9, "x": 2.0, "s": "c", "d": "2026-01-02"}
    assert found["nullCount"] == {"n": 1, "x": 1, "s": 1, "d": 2, "flag": 2}, "no bounds for booleans, counts for all"


def test_long_text_keeps_a_prefix_as_its_minimum_and_no_maximum() -> None:
    long = "k" * (TEXT_CHARS + 10)
    found = stats_of({"s": [long, long + "z"]}, schema=pa.schema([("s", pa.string())]))
    assert found["minValues"] == {"s": long[:TEXT_CHARS]}
    assert "s" not in found["maxValues"], "a cut maximum would be below the file's values"


def test_times_are_stated_to_the_millisecond_minimum_down_maximum_up() -> None:
    schema = pa.schema([("t", pa.timestamp("us", tz="UTC")), ("local", pa.timestamp("us"))])
    moments = [T0 + timedelta(microseconds=1_500), T0 + timedelta(seconds=1, microseconds=2_001)]
    found = stats_of({"t": moments, "local": [m.replace(tzinfo=None) for m in moments]}, schema=schema)
    assert found["minValues"] == {"t": "2026-11-26T08:00:00.001Z"}
    assert found["maxValues"] == {"t": "2026-11-26T08:00:01.003Z"}
    assert found["nullCount"] == {"t": 0, "local": 0}, "no bounds for times without a zone"


def test_nested_columns_are_skipped_and_the_columns_after_them_keep_their_own_bounds() -> None:
    schema = pa.schema(
        [
            ("row", pa.struct([("a", pa.int64()), ("b", pa.string())])),
            ("tags", pa.list_(pa.string())),
            ("amount", pa.decimal128(10, 2)),
            ("n", pa.int32()),
        ]
    )
    group = {
        "row": [{"a": 100, "b": "zz"}, {"a": -100, "b": "aa"}],
        "tags": [["x"], None],
        "amount": [Decimal("1.50"), Decimal("2.25")],
        "n": [7, 8],
    }
    found = stats_of(group, schema=schema)
    assert found["minValues"] == {"n": 7} and found["maxValues"] == {"n": 8}
    assert set(found["nullCount"]) == {"amount", "n"}


@pytest.mark.parametrize("seed", range(10))
def test_every_stated_bound_holds_for_random_files(seed: int) -> None:
    rng = random.Random(seed)
    schema = pa.schema([("n", pa.int64()), ("s", pa.string()), ("t", pa.timestamp("us", tz="UTC"))])

    def group() -> dict[str, Any]:
        size = rng.randrange(1, 20)
        return {
            "n": [rng.choice([None, rng.randrange(-(2**40), 2**40)]) for _ in range(size)],
            "s": ["".join(rng.choice("ab") for _ in range(rng.randrange(0, 40))) for _ in range(size)],
            "t": [T0 + timedelta(microseconds=rng.randrange(10**9)) for _ in range(size)],
        }

    groups = [group() for _ in range(rng.randrange(1, 4))]
    found = stats_of(*groups, schema=schema)
    for name in ("n", "s", "t"):
        values = [v for g in groups for v in g[name] if v is not None]
        if name == "t":
            values = [v.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" for v in values]  # to the millisecond
        if name in found["minValues"]:
            assert all(found["minValues"][name] <= v for v in values)
        if name in found["maxValues"]:
            assert all(found["maxValues"][name] >= v for v in values)
        assert found["nullCount"][name] == sum(v is None for g in groups for v in g[name])


def test_an_add_actions_stats_carry_the_row_count_with_or_without_columns() -> None:
    assert json.loads(delta_stats(3, None)) == {"numRecords": 3}
    columns = json.dumps({"minValues": {"n": 1}, "maxValues": {"n": 2}, "nullCount": {"n": 0}})
    assert json.loads(delta_stats(3, columns)) == {"numRecords": 3, **json.loads(columns)}
