"""A Spark task's Parquet files: one file per partition value for all of the task's shard ranges
together, rolled at a target size, instead of one file per shard.

Contract:
- The range threads of a task share one :class:`TaskFiles`; :meth:`TaskFiles.write` is
  thread-safe, splits the rows by partition value (kinesis_batch.storage.layout) and appends
  them to that value's open file as a row group.
- A file is visible in the data place only once complete (:meth:`Place.open_part`): when it
  reached the target size, when more than ``max_open`` are open (the least recently written
  is finished first, so memory does not grow with the partitions a backlog spans), or when the
  task ends. Leaving the context with an error leaves no file of this object's.
- Names are ``part-<first shard of the task>-<uuid>.parquet``, in the partition's hive folder
  ``COLUMN=VALUE/`` when the output is partitioned: what a task attempt wrote is found by the
  prefix (kinesis_batch.spark.job), and every file has one partition value and one schema.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from kinesis_batch.columns import dictionary_encoded, schema_to_text
from kinesis_batch.storage.file_stats import column_stats
from kinesis_batch.storage.layout import FileLayout
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.staged import StagedFile

MAX_OPEN = 8


@dataclass
class _Open:
    name: str
    partition: str | None
    stack: contextlib.ExitStack
    stream: Any
    writer: Any
    rows: int = 0
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class TaskFiles:
    """The task's files in ``place``; ``files`` names the finished ones (their schema as text
    with ``schemas``: decoded rows, whose files may differ as the table grows)."""

    def __init__(
        self,
        place: Place,
        prefix: str,
        layout: FileLayout,
        *,
        schemas: bool = False,
        max_open: int = MAX_OPEN,
        route: str | None = None,
    ) -> None:
        """``route``: the route the files go to, named in each (a routed run's)."""
        self.place, self.prefix, self.layout, self.schemas, self.max_open = place, prefix, layout, schemas, max_open
        self.route = route
        self.files: list[StagedFile] = []
        self._open: OrderedDict[tuple[str | None, pa.Schema], _Open] = OrderedDict()
        self._lock = threading.Lock()
        self._folders: set[str] = set()

    def __enter__(self) -> TaskFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        self.finish_open(kind, error, trace)

    def finish_open(
        self, kind: type[BaseException] | None = None, error: BaseException | None = None, trace: Any = None
    ) -> None:
        """Finish every open file (after an error: leave none); a later write starts new ones."""
        with self._lock:
            opened, self._open = list(self._open.values()), OrderedDict()
        for handle in opened:
            self._finish(handle, kind, error, trace)

    def write(self, rows: pa.RecordBatch) -> None:
        partition = self.layout.partition
        parts = partition.split(rows) if partition is not None else [(None, rows)]
        for value, part in parts:
            if partition is not None and partition.transform == "identity" and self.layout.drop_identity:
                part = part.drop_columns([partition.source])  # the value is in the folder or the log
            self._append(value, part)

    def _append(self, value: str | None, rows: pa.RecordBatch) -> None:
        key = (value, rows.schema)
        while True:
            finished: list[_Open] = []
            with self._lock:
                handle = self._open.get(key)
                if handle is None:
                    handle = self._start(value, rows.schema)
                    self._open[key] = handle
                    while len(self._open) > self.max_open:
                        finished.append(self._open.popitem(last=False)[1])
                self._open.move_to_end(key)
            for old in finished:
                self._finish(old, None, None, None)
            with handle.lock:
                if handle.closed:  # finished by another thread since we took it: take the next one
                    continue
                handle.writer.write_batch(rows)
                handle.rows += rows.num_rows
                full = handle.stream.tell() >= self.layout.target_bytes
            if full:
                with self._lock:
                    mine = self._open.get(key) is handle
                    if mine:
                        del self._open[key]
                if mine:
                    self._finish(handle, None, None, None)
            return

    def _start(self, value: str | None, schema: pa.Schema) -> _Open:
        import pyarrow.parquet as pq

        name = f"part-{self.prefix}-{uuid.uuid4().hex[:12]}.parquet"
        if self.layout.partition is not None:
            folder = self.layout.partition.folder(value)
            if folder not in self._folders:
                self.place.make_dir(folder)
                self._folders.add(folder)
            name = f"{folder}/{name}"
        stack = contextlib.ExitStack()
        stream = stack.enter_context(self.place.open_part(name))
        writer = stack.enter_context(pq.ParquetWriter(stream, schema, use_dictionary=dictionary_encoded(schema)))
        return _Open(name, value, stack, stream, writer)

    def _finish(self, handle: _Open, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        with handle.lock:
            schema = handle.writer.schema
            handle.closed = True
            handle.stack.__exit__(kind, error, trace)
        if kind is None:
            text = schema_to_text(schema) if self.schemas else None
            stats = column_stats(handle.writer.writer.metadata)  # the footer it wrote on closing
            with self._lock:
                self.files.append(StagedFile(handle.name, handle.rows, text, handle.partition, stats, self.route))


__all__ = ["MAX_OPEN", "TaskFiles"]
