"""A Spark task's Parquet files: one file per partition value for all of the task's shard ranges
together, rolled at a target size, instead of one file per shard; and one such set of files per
route (:class:`RouteFiles`: a run without ``--route-by`` has one route).

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
- :class:`RouteFiles` is thread-safe as :class:`TaskFiles` is; each route's files go where its
  target says (kinesis_batch.spark.targets). At most ``max_routes`` routes have files open at
  once (the least recently written route's are finished first), so a producer sending many
  route values cannot exhaust a task's memory or file handles. Each record of a new route is
  also kept as a dead letter (``routes/_held/``, its route in a column:
  kinesis_batch.routing.routes.HELD_ROUTE), so a route the driver refuses becomes dead letters,
  never lost rows.
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
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.spark.targets import RouteTargets
from kinesis_batch.storage.file_stats import column_stats
from kinesis_batch.storage.layout import FileLayout
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.staged import HELD, StagedFile

MAX_OPEN = 8
#: Routes with files open at once in a task: a page of a stream of many kinds holds rows of each,
#: so fewer than its kinds would finish a file per route and page (benchmarks.routed, 20,000
#: events into 20 tables: 40 files at 32, 86 at 8, more with the backlog); a bound still.
MAX_ROUTES = 32


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


class RouteFiles:
    """One task's files of every route, named ``part-<prefix>-...`` like its other files;
    ``schemas``: each file names its schema (decoded rows, whose files may differ as a table grows)."""

    def __init__(
        self,
        targets: RouteTargets,
        prefix: str,
        dead_layout: FileLayout,
        *,
        schemas: bool = True,
        max_routes: int = MAX_ROUTES,
    ) -> None:
        self.targets, self.prefix, self.schemas, self.max_routes = targets, prefix, schemas, max_routes
        self._routes: dict[str, TaskFiles] = {}
        self._writing: OrderedDict[str, TaskFiles] = OrderedDict()  # at most max_routes, by last write
        self._lock = threading.Lock()
        new = targets.new
        self._held = TaskFiles(new.data.child(HELD), prefix, dead_layout) if new else None
        self._held_made = False

    def __enter__(self) -> RouteFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        with self._lock:
            every = list(self._routes.values())
        for files in every:
            files.finish_open(kind, error, trace)
        if self._held is not None:
            self._held.finish_open(kind, error, trace)

    def write(self, route: str, rows: pa.RecordBatch) -> None:
        """Append ``route``'s rows to its files."""
        with self._lock:
            files = self._routes.get(route)
            if files is None:
                files = self._routes[route] = self._open(route)
            self._writing[route] = files
            self._writing.move_to_end(route)
            evicted = [self._writing.popitem(last=False)[1] for _ in range(len(self._writing) - self.max_routes)]
        for old in evicted:  # the least recently written: a later write starts a new file
            old.finish_open()
        files.write(rows)

    def hold(self, dead: pa.RecordBatch) -> None:
        """Keep new routes' records as dead letters (``dead`` has :data:`HELD_ROUTE`)."""
        new = self.targets.new
        if new is None or self._held is None:
            raise InvalidStateError("records of a new route held, but this run makes no table")
        with self._lock:
            if not self._held_made:
                new.data.make_dir(HELD)
                self._held_made = True
        self._held.write(dead)

    def _open(self, route: str) -> TaskFiles:
        target = self.targets.target(route)
        new = self.targets.new
        if not self.targets.is_known(route) and new is not None:  # never made by a task: it may have been discarded
            new.data.make_dir(route)
        return TaskFiles(target.data, self.prefix, target.layout, schemas=self.schemas, route=route)

    @property
    def files(self) -> list[StagedFile]:
        """Every route's finished files, each naming its route."""
        with self._lock:
            every = list(self._routes.values())
        return [file for files in every for file in files.files]

    @property
    def held_files(self) -> list[StagedFile]:
        return list(self._held.files) if self._held is not None else []


__all__ = ["MAX_OPEN", "MAX_ROUTES", "RouteFiles", "TaskFiles"]
