"""A routed Spark task's files (``--route-by``): each route's rows in files of their own.

Where a route's rows go depends on whether its table existed when the read began:
- a **known** route's files are written in its table's data place, laid out as that table is;
- a **new** route's files are written in the batch's staging (``routes/ROUTE/``), laid out as
  the run asks for new tables, because only the driver may decide, once every task is done,
  which new tables the batch makes (at most ``--max-new-tables``: kinesis_batch.run.route).
  Each record of a new route is also kept as a dead letter (``routes/_held/``, its route in
  a column: kinesis_batch.routing.routes.HELD_ROUTE), so a route the driver refuses becomes
  dead letters, never lost rows.

Contract: thread-safe as :class:`~kinesis_batch.spark.files.TaskFiles` is; at most
``max_routes`` routes have files open at once (the least recently written route's are
finished first), so a producer sending many route values cannot exhaust a task's memory or
file handles.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from kinesis_batch.spark.files import TaskFiles
from kinesis_batch.storage.layout import FileLayout
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.staged import HELD, StagedFile

#: Routes with files open at once in a task: a page of a stream of many kinds holds rows of each,
#: so fewer than its kinds would finish a file per route and page (benchmarks.routed, 20,000
#: events into 20 tables: 40 files at 32, 86 at 8, more with the backlog); a bound still.
MAX_ROUTES = 32


@dataclass(frozen=True)
class Target:
    """Where one table's files go, and how they are laid out."""

    data: Place
    layout: FileLayout

    def to_json(self) -> dict[str, Any]:
        return {"data": self.data.to_json(), "files": self.layout.to_json()}

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Target:
        return cls(Place.from_json(body["data"]), FileLayout.from_json(body["files"]))


@dataclass(frozen=True)
class RouteTargets:
    """The known routes' tables, and the staging of new routes (``new.data`` is the batch's
    ``routes/`` folder, ``new.layout`` a new table's)."""

    new: Target
    known: dict[str, Target] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"new": self.new.to_json(), "known": {r: t.to_json() for r, t in sorted(self.known.items())}}

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> RouteTargets:
        known = {route: Target.from_json(target) for route, target in body["known"].items()}
        return cls(Target.from_json(body["new"]), known)

    def places(self) -> list[Place]:
        """Every place a task may have written to: the known tables' data places, and each
        folder of the new routes' staging (a task's file is named relative to its folder)."""
        return [t.data for _, t in sorted(self.known.items())] + [
            self.new.data.child(f) for f in self.new.data.folders()
        ]

    def target(self, route: str) -> Target:
        """Where ``route``'s rows go: its table's data place, or its folder in the staging."""
        known = self.known.get(route)
        if known is not None:
            return known
        return Target(self.new.data.child(route), self.new.layout)


class RoutedFiles:
    """One task's files of every route, named ``part-<prefix>-...`` like its other files."""

    def __init__(self, targets: RouteTargets, prefix: str, dead_layout: FileLayout, *, max_routes: int = MAX_ROUTES):
        self.targets, self.prefix, self.max_routes = targets, prefix, max_routes
        self._routes: dict[str, TaskFiles] = {}
        self._writing: OrderedDict[str, TaskFiles] = OrderedDict()  # at most max_routes, by last write
        self._lock = threading.Lock()
        held = targets.new.data.child(HELD)
        self._held = TaskFiles(held, prefix, dead_layout)
        self._held_made = False

    def __enter__(self) -> RoutedFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        with self._lock:
            every = list(self._routes.values())
        for files in every:
            files.finish_open(kind, error, trace)
        self._held.finish_open(kind, error, trace)

    def is_known(self, route: str) -> bool:
        return route in self.targets.known

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
        with self._lock:
            if not self._held_made:
                self.targets.new.data.make_dir(HELD)
                self._held_made = True
        self._held.write(dead)

    def _open(self, route: str) -> TaskFiles:
        target = self.targets.target(route)
        if not self.is_known(route):  # a task never makes the staging itself: it may have been discarded
            self.targets.new.data.make_dir(route)
        return TaskFiles(target.data, self.prefix, target.layout, schemas=True, route=route)

    @property
    def files(self) -> list[StagedFile]:
        """Every route's finished files, each naming its route."""
        with self._lock:
            every = list(self._routes.values())
        return [file for files in every for file in files.files]

    @property
    def held_files(self) -> list[StagedFile]:
        return list(self._held.files)


__all__ = ["MAX_ROUTES", "RouteTargets", "RoutedFiles", "Target"]
