"""A shard range's records as Arrow row groups, written to Parquet files.

Memory per range: a row group of bounded size, whatever the backlog. Its size (and that of the
reader's pages) is a share of the task's budget (:func:`buffer_bytes`), so memory does not grow
with the number of shards a task reads either, down to a floor.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from kinesis_batch.columns import BATCH_ID, ROW_SCHEMA, record_columns, schema_to_text
from kinesis_batch.errors import ShutdownError
from kinesis_batch.output.place import Place
from kinesis_batch.output.staged import StagedFile
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


def pages(records: Iterable[Record], stop: threading.Event, most_bytes: int) -> Iterator[list[Record]]:
    """``records`` in pages of at most ROWS_PER_ROW_GROUP records or about ``most_bytes`` of
    data. Raises ShutdownError at the next record once ``stop`` is set (another shard of the
    task failed)."""
    page: list[Record] = []
    size = 0
    for record in records:
        if stop.is_set():
            raise ShutdownError(f"shard {record.shard_id}: another shard of this task failed")
        page.append(record)
        size += len(record.data)
        if len(page) >= ROWS_PER_ROW_GROUP or size >= most_bytes:
            yield page
            page, size = [], 0
    if page:
        yield page


def row_groups(
    records: Iterable[Record], depth: int, batch_id: str | None, stop: threading.Event, most_bytes: int
) -> Iterator[pa.RecordBatch]:
    """``records`` as raw rows (kinesis_batch.columns.ROW_SCHEMA), a record batch per
    page; ``batch_id`` as a column when given."""
    schema = ROW_SCHEMA.append(BATCH_ID) if batch_id else ROW_SCHEMA
    for page in pages(records, stop, most_bytes):
        columns = record_columns(page, depth, data=True)
        if batch_id:
            columns["batch_id"] = [batch_id] * len(page)
        yield pa.RecordBatch.from_pydict(columns, schema=schema)


class PartFiles:
    """One range's Parquet files in ``place``, ``part-<shard>-<uuid>.parquet``, each visible only
    once complete: a new file whenever the rows' schema changes (decoded rows whose table grew).
    ``files`` names each with its rows (and its schema as text with ``schemas``). Used as a
    context manager: leaving it with an error leaves no file."""

    def __init__(self, place: Place, shard_id: str, *, schemas: bool = False) -> None:
        self.place, self.shard_id, self.schemas = place, shard_id, schemas
        self.files: list[StagedFile] = []
        self._stack: contextlib.ExitStack | None = None
        self._writer: Any = None
        self._name, self._rows = "", 0

    def __enter__(self) -> PartFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        self._close(kind, error, trace)

    def write(self, rows: pa.RecordBatch) -> None:
        import pyarrow.parquet as pq

        if self._writer is None or self._writer.schema != rows.schema:
            self._close(None, None, None)
            self._stack = contextlib.ExitStack()
            self._name, self._rows = f"part-{self.shard_id}-{uuid.uuid4().hex[:12]}.parquet", 0
            stream = self._stack.enter_context(self.place.open_part(self._name))  # visible only once complete
            dictionary = [name for name in ("shard_id", "partition_key") if name in rows.schema.names]
            self._writer = self._stack.enter_context(pq.ParquetWriter(stream, rows.schema, use_dictionary=dictionary))
        self._writer.write_batch(rows)
        self._rows += rows.num_rows

    def _close(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        if self._stack is None:
            return
        schema = self._writer.schema
        stack, self._stack, self._writer = self._stack, None, None
        stack.__exit__(kind, error, trace)
        if kind is None:
            text = schema_to_text(schema) if self.schemas else None
            self.files.append(StagedFile(self._name, self._rows, text))


__all__ = ["MIB", "TASK_BUFFER_BYTES", "PartFiles", "buffer_bytes", "pages", "row_groups"]
