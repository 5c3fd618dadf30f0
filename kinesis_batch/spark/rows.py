"""A shard range's records as Arrow row groups, written to one Parquet file.

Memory per range: a row group of bounded size, whatever the backlog. Its size (and that of the
reader's pages) is a share of the task's budget (:func:`buffer_bytes`), so memory does not grow
with the number of shards a task reads either, down to a floor.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

from kinesis_batch.errors import ShutdownError
from kinesis_batch.output.place import Place
from kinesis_batch.output.tables import BATCH_ID, ROW_SCHEMA
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


def row_groups(
    records: Iterable[Record], depth: int, batch_id: str | None, stop: threading.Event, most_bytes: int
) -> Iterator[pa.RecordBatch]:
    """``records`` as Arrow record batches of at most ROWS_PER_ROW_GROUP rows or about
    ``most_bytes`` of data; ``batch_id`` as a column when given. Raises ShutdownError at the
    next record once ``stop`` is set (another shard of the task failed)."""
    schema = ROW_SCHEMA.append(BATCH_ID) if batch_id else ROW_SCHEMA
    columns: dict[str, list[Any]] = {name: [] for name in ROW_SCHEMA.names}
    size = 0
    for record in records:
        if stop.is_set():
            raise ShutdownError(f"shard {record.shard_id}: another shard of this task failed")
        columns["shard_id"].append(record.shard_id)
        columns["sequence_number"].append(record.sequence_number)
        columns["sub_sequence_number"].append(record.sub_sequence_number)
        columns["partition_key"].append(record.partition_key)
        columns["data"].append(record.data)
        columns["approximate_arrival_timestamp"].append(record.approximate_arrival_timestamp)
        size += len(record.data)
        if len(columns["data"]) >= ROWS_PER_ROW_GROUP or size >= most_bytes:
            yield _batch(columns, depth, batch_id, schema)
            columns, size = {name: [] for name in ROW_SCHEMA.names}, 0
    if columns["data"]:
        yield _batch(columns, depth, batch_id, schema)


def _batch(columns: dict[str, list[Any]], depth: int, batch_id: str | None, schema: pa.Schema) -> pa.RecordBatch:
    rows = len(columns["data"])
    columns["lineage_depth"] = [depth] * rows
    if batch_id:
        columns["batch_id"] = [batch_id] * rows
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def write_file(place: Place, name: str, batches: Iterator[pa.RecordBatch], first_written: Callable[[], None]) -> bool:
    """Write ``batches`` to ``name`` in ``place``, visible only once complete; no batches, no
    file (False). ``first_written`` is called once the first row group is written."""
    import pyarrow.parquet as pq

    first = next(batches, None)
    if first is None:
        return False
    with (
        place.open_part(name) as stream,  # visible only once complete
        pq.ParquetWriter(stream, first.schema, use_dictionary=["shard_id", "partition_key"]) as writer,
    ):
        writer.write_batch(first)
        first_written()
        for rows in batches:
            writer.write_batch(rows)
    return True


__all__ = ["MIB", "TASK_BUFFER_BYTES", "buffer_bytes", "row_groups", "write_file"]
