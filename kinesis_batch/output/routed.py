"""A routed run's outputs as one sink: one table per route, each opened from the output template
(kinesis_batch.routing.routes), and the stream's dead-letter output (``home``), published
together so that each record of a batch is rows of one table or a dead letter, exactly once.

How it keeps the sink contract, table by table:
- **Staging** is the home's: the plan and the results. Each staged file names its route, and is
  in that route's table's data place; every route's table is prepared before a file is staged
  for it.
- **Publish** commits the first table in the order of their routes' names, then the others side
  by side (:data:`AT_ONCE` at a time), then the home (its dead letters, and
  always the batch's commit record, even with none); the home's commit removes the staging, so
  it goes last. A table already holding the batch commits nothing again.
- **Committed** means any of them has the batch. If some have it and others not (a crash
  between two commits), :meth:`committed` completes the rest from the staging before it
  answers, so every caller (the publish step retried, recovery, the teardown) finds the batch
  in all of its tables.
- **Discard** fences in the publish's order: the first table of a batch is its gate, so a late
  publish fails at its first commit and never reaches the others. A batch a table holds is not
  discarded but completed (or left to its publisher, completing it that moment). Files a dead
  read left in tables no result names are cleared too (:meth:`targeted`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pyarrow as pa

from kinesis_batch.columns import DEAD_LETTERS, Columns
from kinesis_batch.errors import ForeignOutputError, InvalidStateError, KinesisBatchError, LeaseLostError
from kinesis_batch.events import TABLE_PUBLISHED, Event, emit
from kinesis_batch.landing import Landing
from kinesis_batch.output.datafiles import DataFile
from kinesis_batch.output.formats import drops_identity
from kinesis_batch.output.sink import Stored, discarded
from kinesis_batch.storage.layout import FileLayout, PartitionBy
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile, files_of, staged

#: The tables of a batch made or committed at once (after its first), and its files moved at once:
#: each mostly waits on storage.
AT_ONCE = 8
#: In a batch's staging: the folder of its new routes' files (and, in it, their held dead letters'
#: folder, kinesis_batch.storage.staged.HELD: no route starts with ``_``), what the read step
#: decided on them, and the existing tables its tasks may write into.
NEW_ROUTES, DECIDED, TARGETED = "routes", "_routes.json", "_targets.json"
#: In the home's bookkeeping: the tables the stream's runs made.
TABLES = "tables.json"


class RoutedSink(Stored):
    format = "routed"

    def __init__(
        self,
        template: str,
        home: Stored,
        table: Callable[[str], Stored],
        known: Iterable[str] | None = None,
        *,
        stream: str | None = None,
    ) -> None:
        """``table(route)`` opens a route's table, of the home's format; ``known``: the routes whose
        tables exist (what :meth:`data_files` and :meth:`check_place` cover; default: those the
        home's bookkeeping records as made by the stream's runs); ``stream``: whose tables they
        are (the record names it: another stream's runs are refused at :meth:`prepare`)."""
        self.uri, self.home, self._open, self.stream = template, home, table, stream
        self.widens = home.widens  # the tables' format's
        self._known = set(known) if known is not None else None
        self._tables: dict[str, Stored] = {}

    @property
    def known(self) -> set[str]:
        if self._known is None:
            self._known = set(self._record().get("tables", ()))
        return self._known

    def _record(self) -> dict[str, Any]:
        """The home's record of the stream's tables: ``tables`` and the ``stream`` they are of
        (absent in a record written before streams were recorded)."""
        text = self.home.bookkeeping().read_text(TABLES)
        return dict(json.loads(text)) if text else {}

    def new_layout(self, partition: PartitionBy | None, target_bytes: int) -> FileLayout:
        """How a new table's files are laid out (``partition``: the run's ``--partition-by``)."""
        return FileLayout(partition, drops_identity(self.home.format), target_bytes)

    def new_routes(self, batch_id: str) -> Place:
        """Where the read step's tasks write the rows of routes whose tables do not exist yet."""
        return self.home.staging(batch_id).child(NEW_ROUTES)

    def decided(self, batch_id: str, made: Iterable[str], refused: Iterable[str]) -> None:
        """Record the new tables a batch made (before a file moves in: a discard finds them), and refusals."""
        body = {"made": sorted(made), "refused": sorted(refused)}
        self.home.staging(batch_id).write_text(DECIDED, json.dumps(body))

    def targeted(self, batch_id: str, routes: Iterable[str]) -> None:
        """Record the existing tables a batch's tasks may write into, before they do: a read that
        dies leaves files no result names, which a discard then still clears."""
        self.home.staging(batch_id).write_text(TARGETED, json.dumps({"tables": sorted(routes)}))

    def _targeted(self, batch_id: str) -> set[str]:
        text = self.home.staging(batch_id).read_text(TARGETED)
        return set(json.loads(text)["tables"]) if text else set()

    def table(self, route: str) -> Stored:
        """The sink of one route's table (opened once)."""
        if route not in self._tables:
            self._tables[route] = self._open(route)
        return self._tables[route]

    def dead_letters(self) -> Stored | None:
        return self.home

    # -- staging: the home's ----------------------------------------------------------------------

    def staging(self, batch_id: str) -> Place:
        return self.home.staging(batch_id)

    def data(self, batch_id: str) -> Place:
        return self.home.data(batch_id)

    def write_manifest(self, batch_id: str, body: dict[str, Any]) -> None:
        self.home.write_manifest(batch_id, body)

    def read_manifest(self, batch_id: str) -> dict[str, Any] | None:
        return self.home.read_manifest(batch_id)

    def clear_staged_rows(self, batch_id: str) -> None:
        for route in sorted({*self._routes(batch_id), *self._targeted(batch_id)}):
            self.table(route).clear_staged_rows(batch_id)
        self.new_routes(batch_id).delete_all()
        self.home.clear_staged_rows(batch_id)

    def _staged(self, batch_id: str) -> tuple[dict[str, list[StagedFile]], list[StagedFile]] | None:
        """The batch's row files by route and its dead-letter files; None once the staging went
        (the batch was published, or discarded)."""
        try:
            results = staged(self.home.results(batch_id))
        except KinesisBatchError:  # a file went while it was listed or read (S3: a key gone under the listing)
            if self.home.committed(batch_id) is not None or not self.home.staging(batch_id).exists():
                return None  # the publish's last commit removes the staging, or a discard did
            raise
        if not results and not self.home.staging(batch_id).exists():
            return None
        by_route: dict[str, list[StagedFile]] = defaultdict(list)
        for file in files_of(results):
            if file.route is None:
                raise InvalidStateError(f"batch {batch_id}: staged file {file.name} names no route")
            by_route[file.route].append(file)
        return dict(sorted(by_route.items())), files_of(results, dead_letters=True)

    def _routes(self, batch_id: str) -> list[str]:
        """The routes of a batch's files, and the tables it made (files may be moving into them)."""
        found = self._staged(batch_id)
        text = self.home.staging(batch_id).read_text(DECIDED)
        made = json.loads(text)["made"] if text else []
        return sorted({*(found[0] if found else ()), *made})

    # -- the outputs --------------------------------------------------------------------------------

    def prepare(self, columns: Columns = DEAD_LETTERS, partition_by: str | None = None) -> None:
        """The home only: the routes' tables are made or checked by :meth:`prepare_tables`. A
        template whose tables another stream's runs made is refused: their rows could not be
        told apart, and their records would go to one dead-letter output."""
        self.home.check_place()
        theirs = self._record().get("stream") if self.stream is not None and self.home.exists() else None
        if theirs not in (None, self.stream):
            raise ForeignOutputError(
                f"--output {self.uri}: its tables are stream {theirs}'s (recorded in {self.home.uri}); "
                "give each stream an output of its own"
            )
        self.home.prepare(DEAD_LETTERS)

    def prepare_tables(self, columns: dict[str, Columns], partition_by: str | None = None) -> dict[str, str]:
        """Make each new route's table with its ``columns``, as :meth:`Sink.prepare` does,
        :data:`AT_ONCE` side by side, and record them among the stream's tables. A route whose
        place holds a table this consumer never published to (another stream's, somebody's), or
        anything it cannot make its table of (another format's table, a folder of files, a table
        of other columns), is not made: returns those routes, each with why (one line)."""
        routes = sorted(columns)

        def make(route: str) -> str | None:
            table = self.table(route)
            try:
                if table.exists() and not _adoptable(table):
                    return f"{route} names {table.uri}, a table this consumer did not make"
                table.prepare(columns[route], partition_by)
            except KinesisBatchError as exc:  # the place's own one line: what is there
                return f"{route} names {table.uri}, where it cannot make its table: {exc}"
            return None

        with ThreadPoolExecutor(AT_ONCE, thread_name_prefix="prepare") as pool:
            said = dict(zip(routes, pool.map(make, routes), strict=True))
        refused = {route: why for route, why in said.items() if why is not None}
        self._remember(route for route in routes if route not in refused)
        return refused

    def _remember(self, routes: Iterable[str]) -> None:
        """Add ``routes`` to the stream's tables (the home's bookkeeping, read again first). Two runs
        adding at once may lose a name: the next run finds that table again and checks it."""
        self._known = None
        adding = set(routes)
        if adding - self.known:
            self.known.update(adding)
            body = {"tables": sorted(self.known), **({"stream": self.stream} if self.stream else {})}
            self.home.bookkeeping().write_text(TABLES, json.dumps(body))

    def partitioning(self) -> PartitionBy | None:
        return None  # each table has its own (:meth:`table`)

    def writes_batch_column(self) -> bool:
        return self.home.writes_batch_column()  # the tables' format's

    def fields(self) -> pa.Schema | None:
        return None  # each table has its own

    def publish(self, record: CommitRecord, files: Sequence[StagedFile]) -> bool:
        """``files``: the batch's row files, each naming its route."""
        batch_id = record.batch_id
        found = self._staged(batch_id)
        if found is None:  # the staging went: published meanwhile, or discarded
            if self.home.committed(batch_id) is not None:
                return False
            raise discarded(batch_id)
        by_route: dict[str, list[StagedFile]] = defaultdict(list)
        for file in files:
            by_route[str(file.route)].append(file)
        routes = sorted(by_route)

        def commit(route: str) -> bool:
            done = self.table(route).publish(record, by_route[route])
            emit(Event(TABLE_PUBLISHED, batch_id, route))
            return done

        # The first table alone: it is the gate a discard fences first, so a late publish stops
        # there. Once it holds the batch the batch is decided, and the rest commit side by side.
        published = [commit(routes[0])] if routes else []
        if routes[1:]:
            with ThreadPoolExecutor(min(AT_ONCE, len(routes) - 1), thread_name_prefix="publish") as pool:
                published += list(pool.map(commit, routes[1:]))
        return self.home.publish(self._counted(record, routes), found[1]) or any(published)

    def committed(self, batch_id: str) -> CommitRecord | None:
        record = self.home.committed(batch_id)
        if record is not None:
            return record
        found = self._staged(batch_id)
        if found is None:
            return self.home.committed(batch_id)  # the staging went meanwhile: published, or discarded
        by_route, dead = found
        record = next((r for route in by_route if (r := self.table(route).committed(batch_id)) is not None), None)
        if record is None:
            return None
        try:  # a crash came between two commits, or the publisher is between them right now
            for route, files in by_route.items():
                self.table(route).publish(record, files)
            self.home.publish(self._counted(record, by_route), dead)
        except KinesisBatchError:
            if self.home.committed(batch_id) is None:  # not the publisher's own completion meanwhile
                raise
        return self.home.committed(batch_id) or record

    def _counted(self, record: CommitRecord, routes: Iterable[str]) -> CommitRecord:
        """The batch's record for the home once every table holds it: with ``--changes``, each
        route's change counts as its own table's commit gives them (its merge counted them;
        kinesis_batch.output.changes), whichever table's record ``record`` is."""
        if not any(shard.landing and shard.landing.keys for shard in record.shards):
            return record  # events: nothing counted at the tables
        theirs = {route: self.table(route).committed(record.batch_id) for route in routes}
        shards = []
        for shard in record.shards:
            landing = shard.landing or Landing()
            counted = dict(landing.table_changes)
            for route, table_record in theirs.items():
                if table_record is None:
                    raise InvalidStateError(f"batch {record.batch_id} is not in table {route} after its publish")
                said = next((s.landing for s in table_record.shards if s.shard_id == shard.shard_id), None)
                if said is not None and route in said.table_changes:
                    counted[route] = said.table_changes[route]
            shards.append(replace(shard, landing=replace(landing, table_changes=counted)))
        return replace(record, shards=tuple(shards))

    def discard(self, batch_id: str, *, fence: bool = True) -> bool:
        decided = self._completed(batch_id)
        if decided is not False:
            if decided:
                self.home.discard(batch_id, fence=fence)  # only its bookkeeping goes
            return False
        discarded_any = False
        routes, targeted = self._routes(batch_id), self._targeted(batch_id)
        for route in routes:  # the publish's order: the first is the gate
            table = self.table(route)
            if table.discard(batch_id, fence=fence):
                discarded_any = True
            elif table.committed(batch_id) is not None:  # a late publish got there first: decided
                if self._completed(batch_id):
                    self.home.discard(batch_id, fence=fence)
                return False
        for route in sorted(targeted - set(routes)):  # files of a read that died before its results
            self.table(route).data(batch_id).delete_all()  # this batch's only: never published there
        return self.home.discard(batch_id, fence=fence) or discarded_any

    def _completed(self, batch_id: str) -> bool | None:
        """:meth:`committed` (completing it): True; False: not published; None: its publisher is
        completing it this moment (moved a table's files first), and needs its bookkeeping."""
        try:
            return self.committed(batch_id) is not None
        except LeaseLostError:  # committed() raises only for a batch a table holds: decided
            return None

    def last_batch(self) -> CommitRecord | None:
        return self.home.last_batch()

    def bookkeeping(self) -> Place:
        return self.home.bookkeeping()

    def data_files(self) -> list[DataFile]:
        """The files of every known route's table."""
        return [file for route in sorted(self.known) for file in self.table(route).data_files()]

    def check_place(self) -> None:
        self.home.check_place()
        for route in sorted(self.known):
            self.table(route).check_place()

    def exists(self) -> bool:
        return self.home.exists()

    def is_ours(self) -> bool:
        return self.home.is_ours()


def _adoptable(table: Stored) -> bool:
    """A table found at a new route's place that is this consumer's after all, though the record
    does not name it: one it published to (two runs adding names at once lost one), or one a
    run made, still empty, that a crash kept from the record."""
    return table.last_batch() is not None or (table.is_ours() and not table.data_files())


__all__ = ["AT_ONCE", "DECIDED", "NEW_ROUTES", "TABLES", "TARGETED", "RoutedSink"]
