"""Rewrite small Parquet files into files of the target size: the data side of compaction for
the formats whose library has none (Iceberg through pyiceberg, parquet folders). Delta's
compaction is deltalake's own optimize.

Contract:
- The inputs' rows are written in the inputs' order, every row once, each fitted to ``schema``
  (a column a file lacks is null; a narrower type is widened, as the table's schema allows).
- Memory is one row group (up to ``ROW_GROUP_BYTES`` of Arrow data) plus one input batch,
  whatever the partition's size: rows are read a batch at a time and written as they come.
- Output files roll at ``target_bytes`` and are each visible only once complete
  (kinesis_batch.storage.place). An error leaves none of them; what was written is returned,
  and the caller commits or deletes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from kinesis_batch.columns import dictionary_encoded
from kinesis_batch.storage.place import Place

ROW_GROUP_BYTES = 64 * 1024 * 1024
ROW_GROUP_ROWS = 1_000_000
READ_BATCH_ROWS = 64 * 1024


@dataclass(frozen=True)
class Written:
    """A file the rewrite made: its name in the output place, its rows and size."""

    name: str
    rows: int
    bytes: int


def rewrite(inputs: Sequence[Place], out: Place, *, folder: str, target_bytes: int) -> list[Written]:
    """Rewrite ``inputs`` into ``out``/``folder``/part-compact-<uuid>.parquet files of
    ``target_bytes``, with the inputs' schemas unified (a decoded table's files differ as it
    grew: a newer file's columns are null in an older file's rows); returns them in order."""
    schema = unified(inputs)
    written: list[Written] = []
    buffered: list[pa.RecordBatch] = []
    writer: _Output | None = None
    try:
        size = rows = 0
        for batch in _batches(inputs, schema):
            buffered.append(batch)
            size, rows = size + batch.nbytes, rows + batch.num_rows
            if size >= ROW_GROUP_BYTES or rows >= ROW_GROUP_ROWS:
                writer = writer or _Output.start(out, folder, schema)
                writer.write(buffered)
                buffered, size, rows = [], 0, 0
                if writer.size() >= target_bytes:
                    written.append(writer.finish())
                    writer = None
        if buffered:
            writer = writer or _Output.start(out, folder, schema)
            writer.write(buffered)
        if writer is not None:
            written.append(writer.finish())
            writer = None
    except BaseException:
        if writer is not None:
            writer.abort()
        for file in written:
            out.delete(file.name)
        raise
    return written


def unified(inputs: Sequence[Place]) -> pa.Schema:
    """The schema every input fits: their columns, in first-seen order, types widened."""
    import pyarrow.parquet as pq

    schemas = []
    for place in inputs:
        with place.filesystem().open_input_file(place.path) as stream:
            schemas.append(pq.read_schema(stream).remove_metadata())
    return pa.unify_schemas(schemas, promote_options="permissive")


def conformed(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``schema``'s columns: missing ones null, others cast (widened)."""
    columns = []
    for field in schema:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            columns.append(pa.nulls(batch.num_rows, field.type))
            continue
        column = batch.column(index)
        columns.append(column if column.type == field.type else column.cast(field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _batches(inputs: Sequence[Place], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    for place in inputs:
        with place.filesystem().open_input_file(place.path) as stream:
            for batch in pq.ParquetFile(stream).iter_batches(batch_size=READ_BATCH_ROWS):
                yield conformed(batch, schema)


class _Output:
    """One output file being written (visible once ``finish`` returns)."""

    def __init__(self, out: Place, name: str, schema: pa.Schema) -> None:
        import pyarrow.parquet as pq

        self.out, self.name = out, name
        self.part = out.open_part(name)
        self.stream = self.part.__enter__()
        self.writer = pq.ParquetWriter(self.stream, schema, use_dictionary=dictionary_encoded(schema))
        self.rows = 0

    @classmethod
    def start(cls, out: Place, folder: str, schema: pa.Schema) -> _Output:
        name = f"part-compact-{uuid.uuid4().hex[:16]}.parquet"
        (out.child(folder) if folder else out).make_dirs()  # an unpartitioned table's too
        return cls(out, f"{folder}/{name}" if folder else name, schema)

    def write(self, batches: list[pa.RecordBatch]) -> None:
        table = pa.Table.from_batches(batches)
        self.writer.write_table(table, row_group_size=table.num_rows)
        self.rows += table.num_rows

    def size(self) -> int:
        return int(self.stream.tell())

    def finish(self) -> Written:
        self.writer.close()
        size = self.size()
        self.part.__exit__(None, None, None)
        return Written(self.name, self.rows, size)

    def abort(self) -> None:
        error = RuntimeError("rewrite aborted")
        try:
            self.writer.close()
        finally:
            self.part.__exit__(RuntimeError, error, None)


__all__ = ["ROW_GROUP_BYTES", "Written", "conformed", "rewrite", "unified"]
