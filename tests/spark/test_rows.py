"""A range's records as row groups (pure): pages joined and cut at the row and byte limits, a
stop honoured at the next page, and the columns built at once equal to those built record by
record from the reader's Record objects (kinesis_batch.columns.record_columns)."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from kinesis_batch.columns import BATCH_ID, ROW_SCHEMA, record_columns
from kinesis_batch.errors import ShutdownError
from kinesis_batch.shards.chunk import Chunk, unpack
from kinesis_batch.shards.page import RecordColumns
from kinesis_batch.spark import rows
from kinesis_batch.spark.rows import batches, row_groups
from tests.shards.test_deaggregation import aggregate

SHARD = "shardId-000000000003"


def chunk(first: int, n: int, size: int = 1) -> Chunk:
    """``n`` records of ``size`` bytes, sequence numbers from ``first``."""
    numbers = [str(2**128 + s) for s in range(first, first + n)]
    arrivals = [1_795_690_590_088 + s for s in range(n)]
    return unpack(SHARD, RecordColumns(numbers, arrivals, ["k"] * n, [b"x" * size] * n))


@pytest.mark.parametrize(
    ("pages", "most_bytes", "per_row_limit", "sizes"),
    [
        ([3, 3, 3], 1_000, 4, [4, 4, 1]),  # joined, then cut at the row limit
        ([10], 1_000, 4, [4, 4, 2]),  # one page cut in three
        ([2, 2, 2], 4, 100, [4, 2]),  # the byte share reached after two pages
        ([], 1_000, 4, []),
    ],
    ids=["rows", "one-page", "bytes", "nothing"],
)
def test_pages_become_batches_at_the_row_and_byte_limits(
    pages: list[int], most_bytes: int, per_row_limit: int, sizes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rows, "ROWS_PER_ROW_GROUP", per_row_limit)
    chunks, at = [], 0
    for n in pages:
        chunks.append(chunk(at, n))
        at += n
    out = list(batches(chunks, threading.Event(), most_bytes))
    assert [len(b) for b in out] == sizes
    assert [s for b in out for s in b.sequence_numbers] == [s for c in chunks for s in c.sequence_numbers]


def test_a_stop_ends_the_batches_at_the_next_page() -> None:
    stop = threading.Event()
    out = batches([chunk(0, 2), chunk(2, 2)], stop, 1)
    next(out)
    stop.set()
    with pytest.raises(ShutdownError, match=f"shard {SHARD}: another shard of this task failed"):
        next(out)


@pytest.mark.parametrize("batch_id", [None, "batch-1"])
def test_columns_built_at_once_equal_those_built_record_by_record(batch_id: str | None) -> None:
    packed = aggregate(("a", b"one"), ("b", b""))[2]
    records = RecordColumns(["1", str(2**128)], [0, 1_795_690_590_088], ["p", "q"], [packed, b"\x00" * 1024])
    chunks = [unpack(SHARD, records)]
    built = list(row_groups(chunks, 2, batch_id, threading.Event(), 1 << 20))

    records = list(chunks[0].records())
    columns = record_columns(records, 2, data=True)
    schema = ROW_SCHEMA
    if batch_id:
        columns["batch_id"] = [batch_id] * len(records)
        schema = ROW_SCHEMA.append(BATCH_ID)
    assert built == [pa.RecordBatch.from_pydict(columns, schema=schema)]
