"""A shard range's records as Arrow row groups, written to Parquet files.

Memory per range: a row group of bounded size, whatever the backlog. Its size (and that of the
reader's pages) is a share of the task's budget (:func:`buffer_bytes`), so memory does not grow
with the number of shards a task reads either, down to a floor.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

import pyarrow as pa

from kinesis_batch.columns import BATCH_ID, ROW_SCHEMA, chunk_columns
from kinesis_batch.errors import ShutdownError
from kinesis_batch.shards.chunk import Chunk
from kinesis_batch.shards.model import Record

MIB = 1024 * 1024
ROWS_PER_ROW_GROUP = 10_000  # at most; fewer when the byte share comes first
TASK_BUFFER_BYTES = 128 * MIB  # record bytes a task holds in pages and row groups, over its shards
MAX_BUFFER_BYTES = 8 * MIB  # a page or row group of one shard: few shards need no bigger ones
# At Kinesis' 5 calls/s and 2 MiB/s, a shard needs 400 KiB a call: smaller pages would slow it.
MIN_BUFFER_BYTES = 512 * 1024


def buffer_bytes(ranges: int) -> int:
    """The bytes of records one range's page (and row group) aims at in a task of ``ranges``:
    each range holds two pages and a row group, so the task holds about TASK_BUFFER_BYTES of
    records (in Python, about 2.5 times that) up to 85 ranges, and 1.5 MiB a range beyond."""
    return max(MIN_BUFFER_BYTES, min(MAX_BUFFER_BYTES, TASK_BUFFER_BYTES // (3 * max(ranges, 1))))


def batches(chunks: Iterable[Chunk], stop: threading.Event, most_bytes: int) -> Iterator[Chunk]:
    """``chunks`` (a shard's pages) joined and cut into batches of at most ROWS_PER_ROW_GROUP
    records or about ``most_bytes`` of data. Raises ShutdownError at the next page once
    ``stop`` is set (another shard of the task failed)."""
    held: list[Chunk] = []
    rows = size = 0
    for chunk in chunks:
        if stop.is_set():
            raise ShutdownError(f"shard {chunk.shard_id}: another shard of this task failed")
        while len(chunk):
            room = ROWS_PER_ROW_GROUP - rows
            part, chunk = chunk.cut(0, min(room, len(chunk))), chunk.cut(min(room, len(chunk)), len(chunk))
            held.append(part)
            rows, size = rows + len(part), size + part.size
            if rows >= ROWS_PER_ROW_GROUP or size >= most_bytes:
                yield Chunk.join(held)
                held, rows, size = [], 0, 0
    if held:
        yield Chunk.join(held)


def pages(chunks: Iterable[Chunk], stop: threading.Event, most_bytes: int) -> Iterator[list[Record]]:
    """:func:`batches` of records, one object each (what decoding works on)."""
    for batch in batches(chunks, stop, most_bytes):
        yield list(batch.records())


def row_groups(
    chunks: Iterable[Chunk], depth: int, batch_id: str | None, stop: threading.Event, most_bytes: int
) -> Iterator[pa.RecordBatch]:
    """``chunks`` as raw rows (kinesis_batch.columns.ROW_SCHEMA), a record batch per
    :func:`batches`' batch, each column built at once; ``batch_id`` as a column when given."""
    schema = ROW_SCHEMA.append(BATCH_ID) if batch_id else ROW_SCHEMA
    for batch in batches(chunks, stop, most_bytes):
        columns = chunk_columns(batch, depth)
        if batch_id:
            columns.append(pa.repeat(pa.scalar(batch_id, BATCH_ID.type), len(batch)))
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


__all__ = ["MIB", "TASK_BUFFER_BYTES", "batches", "buffer_bytes", "pages", "row_groups"]
