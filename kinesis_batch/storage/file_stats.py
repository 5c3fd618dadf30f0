"""A Parquet file's column statistics, as Delta's add actions state them (``minValues``,
``maxValues``, ``nullCount``), taken from the footer its writer just made: so that a reader of
the table (deltalake, Spark, Trino, Athena, DuckDB) skips the files a filter rules out, from the
first publish on, not only once maintenance has rewritten them. Pure.

Contract: every bound is a true bound of the file's values, or absent (a reader then reads the
file). Top-level columns only; numbers, text, dates and UTC times. Text keeps at most
:data:`TEXT_CHARS` characters: a minimum is cut to a prefix (still no greater than any value), a
longer maximum is left out. Times are stated to the millisecond, as Delta's readers parse them:
a minimum rounded down, a maximum up.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TEXT_CHARS = 32  # as Spark's Delta writer cuts text statistics


def column_stats(metadata: pq.FileMetaData) -> str | None:
    """The file's ``minValues``, ``maxValues`` and ``nullCount`` as JSON (None: nothing to say)."""
    schema = metadata.schema.to_arrow_schema()
    lows: dict[str, Any] = {}
    highs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    leaf = 0
    for field in schema:
        index, leaf = leaf, leaf + _leaves(field.type)
        if pa.types.is_nested(field.type) or not metadata.num_row_groups:
            continue
        stats = [metadata.row_group(group).column(index).statistics for group in range(metadata.num_row_groups)]
        if all(s is not None and s.has_null_count for s in stats):
            nulls[field.name] = sum(s.null_count for s in stats)
        if not all(s is not None and s.has_min_max for s in stats):
            continue
        low = _low(field.type, min(s.min for s in stats))
        high = _high(field.type, max(s.max for s in stats))
        if low is not None:
            lows[field.name] = low
        if high is not None:
            highs[field.name] = high
    if not (lows or highs or nulls):
        return None
    return json.dumps({"minValues": lows, "maxValues": highs, "nullCount": nulls}, separators=(",", ":"))


def delta_stats(rows: int, stats: str | None) -> str:
    """An add action's ``stats``: the row count and, when known, the columns' statistics."""
    return json.dumps({"numRecords": rows, **(json.loads(stats) if stats else {})}, separators=(",", ":"))


def _low(kind: pa.DataType, value: Any) -> Any:
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return value[:TEXT_CHARS]
    if pa.types.is_timestamp(kind):
        return _millis(value, up=False) if kind.tz else None
    return _plain(kind, value)


def _high(kind: pa.DataType, value: Any) -> Any:
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return value if len(value) <= TEXT_CHARS else None
    if pa.types.is_timestamp(kind):
        return _millis(value, up=True) if kind.tz else None
    return _plain(kind, value)


def _plain(kind: pa.DataType, value: Any) -> Any:
    if pa.types.is_integer(kind):
        return int(value)
    if pa.types.is_floating(kind):
        return float(value) if math.isfinite(value) else None
    if pa.types.is_date32(kind):
        return value.isoformat()
    return None  # booleans, decimals, binary: no bound stated


def _millis(moment: datetime, *, up: bool) -> str:
    rest = moment.microsecond % 1000
    moment -= timedelta(microseconds=rest)
    if up and rest:
        moment += timedelta(milliseconds=1)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _leaves(kind: pa.DataType) -> int:
    """How many Parquet columns a field of this type is stored as."""
    if pa.types.is_struct(kind):
        return sum(_leaves(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_map(kind):
        return _leaves(kind.key_type) + _leaves(kind.item_type)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _leaves(kind.value_type)
    return 1


__all__ = ["TEXT_CHARS", "column_stats", "delta_stats"]
