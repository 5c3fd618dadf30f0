"""A run's outputs as one sink: its tables by route and its dead-letter output, published together
so that each record of a batch is rows of one table or a dead letter, exactly once.

Routing is the general case (kinesis_batch.routing): a run without ``--route-by`` has one route,
:data:`~kinesis_batch.routing.routes.SINGLE`, whose table is fixed (:meth:`RunSink.single`); a
routed run's tables are a template's, made by its runs as routes appear (:meth:`RunSink.template`).
Two members are named:
- the **record holder** keeps the batch's staging (plan, results) and gets its commit record
  last, always (even with no rows of its own). A fixed table is its own holder; a template's is
  its dead-letter output (``home``), whose bookkeeping records the tables the stream's runs made.
- the **gate** is the first member a batch is published to and the first a discard fences, so
  a late publish fails there and reaches no other. The members besides the holder go in one
  order: the dead-letter output (if it is not the holder), then the routes' tables by name; the
  gate goes alone, the others side by side (:data:`AT_ONCE`), then the holder.

The two shapes keep the layouts and markers of the sinks before them: a single table with dead
letters publishes its dead letters, then the table (which holds the staging); a template its
tables in route order, then its dead-letter output (which holds the staging).

How it keeps the sink contract (kinesis_batch.output.sink):
- **Committed** means any member has the batch. If some have it and others not (a crash between
  two publishes), :meth:`committed` completes the rest from the staging before it answers, so
  every caller (the publish step retried, recovery, the teardown) finds the batch in all of them.
- **Discard** fences in the publish's order. A batch a member holds is not discarded but
  completed (or left to its publisher, completing it that moment). Files a dead read left in
  tables no result names are cleared too (:meth:`targeted`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pyarrow as pa

from kinesis_batch.columns import DEAD_LETTERS, RAW, Columns
from kinesis_batch.errors import ForeignOutputError, InvalidStateError, KinesisBatchError, LeaseLostError
from kinesis_batch.events import DEAD_LETTERS_PUBLISHED, TABLE_PUBLISHED, Event, emit
from kinesis_batch.landing import Landing
from kinesis_batch.output.datafiles import DataFile
from kinesis_batch.output.formats import drops_identity
from kinesis_batch.output.sink import Stored, discarded
from kinesis_batch.routing.routes import ROUTE, SINGLE
from kinesis_batch.storage.layout import FileLayout, PartitionBy
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile, files_of, staged

#: The tables of a batch made or committed at once (after its gate), and its files moved at
#: once: each mostly waits on storage.
AT_ONCE = 8
#: In a batch's staging: the folder of its new routes' files (and, in it, their held dead letters'
#: folder, kinesis_batch.storage.staged.HELD: no route starts with ``_``), what the read step
#: decided on them, and the existing tables its tasks may write into.
NEW_ROUTES, DECIDED, TARGETED = "routes", "_routes.json", "_targets.json"
#: In a template's dead-letter output's bookkeeping: the tables the stream's runs made.
TABLES = "tables.json"


class RunSink(Stored):
    format = "run"

    def __init__(
        self,
        uri: str,
        holder: Stored,
        dead: Stored | None,
        table: Callable[[str], Stored],
        known: Iterable[str] | None = None,
        *,
        fixed: bool = False,
        stream: str | None = None,
    ) -> None:
        """Use :meth:`single` or :meth:`template`. ``table(route)`` opens a route's table;
        ``known``: the routes whose tables exist (default: those the dead-letter output's
        bookkeeping records as made by the stream's runs); ``fixed``: the one route's table is
        the holder and is made at :meth:`prepare`; ``stream``: whose tables a template's are
        (its record names it: another stream's runs are refused at :meth:`prepare`)."""
        self.uri, self.holder, self.dead, self._open = uri, holder, dead, table
        self.fixed, self.stream = fixed, stream
        self.widens = holder.widens  # the tables' format's
        self._known = set(known) if known is not None else None
        self._tables: dict[str, Stored] = {}

    @classmethod
    def of(cls, uri: str, table: Callable[[str], Stored], dead: Stored | None, *, stream: str) -> RunSink:
        """The sink of output ``uri``: a template's tables (``{route}`` in it: :meth:`template`),
        else its one table, ``table(SINGLE)`` (:meth:`single`); ``dead``: the dead-letter output
        (None: raw rows, which a template never has)."""
        if ROUTE not in uri:
            return cls.single(table(SINGLE), dead)
        if dead is None:
            raise InvalidStateError(f"--output {uri}: a template's runs decode, and need a dead-letter output")
        return cls.template(uri, dead, table, stream=stream)

    @classmethod
    def single(cls, table: Stored, dead: Stored | None = None) -> RunSink:
        """One table, the record holder, and (a decoding run) its dead-letter output, the gate."""
        return cls(table.uri, table, dead, lambda route: table, {SINGLE}, fixed=True)

    @classmethod
    def template(
        cls,
        template: str,
        home: Stored,
        table: Callable[[str], Stored],
        known: Iterable[str] | None = None,
        *,
        stream: str | None = None,
    ) -> RunSink:
        """A template's tables (``table(route)`` opens one, of the home's format), their gate
        the first by name; ``home``, the dead-letter output, the record holder."""
        return cls(template, home, home, table, known, stream=stream)

    # -- the routes' tables -----------------------------------------------------------------------

    @property
    def known(self) -> set[str]:
        """The routes whose tables exist."""
        if self._known is None:
            self._known = set(self._record().get("tables", ()))
        return self._known

    def table(self, route: str) -> Stored:
        """The sink of one route's table (opened once)."""
        if route not in self._tables:
            self._tables[route] = self._open(route)
        return self._tables[route]

    def route_fields(self) -> dict[str, pa.Schema]:
        """The fields of each table the stream's runs made (a fixed table's are :meth:`fields`)."""
        if self.fixed:
            return {}
        return {route: self.table(route).fields() or pa.schema([]) for route in sorted(self.known)}

    def new_routes(self, batch_id: str) -> Place | None:
        """Where the read step's tasks write the rows of routes whose tables do not exist yet
        (None: the one table is fixed, no route makes another)."""
        return None if self.fixed else self.holder.staging(batch_id).child(NEW_ROUTES)

    def new_layout(self, partition: PartitionBy | None, target_bytes: int) -> FileLayout:
        """How a new table's files are laid out (``partition``: the run's ``--partition-by``)."""
        return FileLayout(partition, drops_identity(self.holder.format), target_bytes)

    def decided(self, batch_id: str, made: Iterable[str], refused: Iterable[str]) -> None:
        """Record the new tables a batch made (before a file moves in: a discard finds them), and refusals."""
        body = {"made": sorted(made), "refused": sorted(refused)}
        self.holder.staging(batch_id).write_text(DECIDED, json.dumps(body))

    def targeted(self, batch_id: str, routes: Iterable[str]) -> None:
        """Record the existing tables a batch's tasks may write into, before they do: a read that
        dies leaves files no result names, which a discard then still clears. (A fixed table
        holds the staging itself: its own discard clears it.)"""
        if not self.fixed:
            self.holder.staging(batch_id).write_text(TARGETED, json.dumps({"tables": sorted(routes)}))

    def _targeted(self, batch_id: str) -> set[str]:
        text = None if self.fixed else self.holder.staging(batch_id).read_text(TARGETED)
        return set(json.loads(text)["tables"]) if text else set()

    def _record(self) -> dict[str, Any]:
        """The record of a template's tables: ``tables`` and the ``stream`` they are of (absent
        in a record written before streams were recorded)."""
        text = self.holder.bookkeeping().read_text(TABLES)
        return dict(json.loads(text)) if text else {}

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
        """Add ``routes`` to the stream's tables (the holder's bookkeeping, read again first). Two
        runs adding at once may lose a name: the next run finds that table again and checks it."""
        self._known = None
        adding = set(routes)
        if adding - self.known:
            self.known.update(adding)
            body = {"tables": sorted(self.known), **({"stream": self.stream} if self.stream else {})}
            self.holder.bookkeeping().write_text(TABLES, json.dumps(body))

    def dead_letters(self) -> Stored | None:
        return self.dead

    def table_sink(self) -> Stored:
        """The fixed table (a template's tables are :meth:`table`'s)."""
        return self.holder if self.fixed else self

    # -- staging: the holder's --------------------------------------------------------------------

    def staging(self, batch_id: str) -> Place:
        return self.holder.staging(batch_id)

    def data(self, batch_id: str) -> Place:
        return self.holder.data(batch_id)

    def write_manifest(self, batch_id: str, body: dict[str, Any]) -> None:
        """The plan, in the holder's staging; a dead-letter output that is not the holder gets a
        staging of its own too, so that its maintenance sees the batch's dead letters as staged,
        not as orphans."""
        self.holder.write_manifest(batch_id, body)
        if self.dead is not None and self.dead is not self.holder:
            self.dead.write_manifest(batch_id, {"batch": batch_id, "table": self.holder.uri})

    def read_manifest(self, batch_id: str) -> dict[str, Any] | None:
        return self.holder.read_manifest(batch_id)

    def clear_staged_rows(self, batch_id: str) -> None:
        for route in sorted({*self._routes(batch_id), *self._targeted(batch_id)}):
            if self.table(route) is not self.holder:
                self.table(route).clear_staged_rows(batch_id)
        new = self.new_routes(batch_id)
        if new is not None:
            new.delete_all()
        if self.dead is not None and self.dead is not self.holder:
            self.dead.clear_staged_rows(batch_id)
        self.holder.clear_staged_rows(batch_id)

    def _staged(self, batch_id: str) -> tuple[dict[str, list[StagedFile]], list[StagedFile]] | None:
        """The batch's row files by route and its dead-letter files; None once the staging went
        (the batch was published, or discarded)."""
        try:
            results = staged(self.holder.results(batch_id))
        except KinesisBatchError:  # a file went while it was listed or read (S3: a key gone under the listing)
            if self.holder.committed(batch_id) is not None or not self.holder.staging(batch_id).exists():
                return None  # the publish's last commit removes the staging, or a discard did
            raise
        if not results and not self.holder.staging(batch_id).exists():
            return None
        return self._by_route(files_of(results)), files_of(results, dead_letters=True)

    def _by_route(self, files: Iterable[StagedFile]) -> dict[str, list[StagedFile]]:
        """A fixed table's files name no route: they are :data:`SINGLE`'s."""
        by_route: dict[str, list[StagedFile]] = defaultdict(list)
        for file in files:
            if file.route is None and not self.fixed:
                raise InvalidStateError(f"staged file {file.name} names no route")
            by_route[file.route or SINGLE].append(file)
        return dict(sorted(by_route.items()))

    def _routes(self, batch_id: str) -> list[str]:
        """The routes of a batch's files, and the tables it made (files may be moving into them)."""
        if self.fixed:
            return [SINGLE]
        found = self._staged(batch_id)
        text = self.holder.staging(batch_id).read_text(DECIDED)
        made = json.loads(text)["made"] if text else []
        return sorted({*(found[0] if found else ()), *made})

    # -- the members, in the publish's order ------------------------------------------------------

    def _gates(self, routes: Iterable[str]) -> list[tuple[str | None, Stored]]:
        """Every member but the holder, in the publish's order, each with its route (None: the
        dead-letter output): the first is the gate."""
        members: list[tuple[str | None, Stored]] = []
        if self.dead is not None and self.dead is not self.holder:
            members.append((None, self.dead))
        members += [(route, self.table(route)) for route in sorted(routes) if self.table(route) is not self.holder]
        return members

    def _held(self, by_route: dict[str, list[StagedFile]], dead_files: list[StagedFile]) -> list[StagedFile]:
        """The holder's own files: its route's rows, or (a template's) the dead letters."""
        if self.fixed:
            return by_route.get(SINGLE, [])
        return dead_files

    # -- the outputs --------------------------------------------------------------------------------

    def prepare(self, columns: Columns = RAW, partition_by: str | None = None) -> None:
        """The fixed table with the layout asked for, and the dead-letter output with its own (a
        new one's: by day of arrival, as dead letters have no decoded field); a template's tables
        are made or checked by :meth:`prepare_tables`. Every place is checked first: none is made
        when another is not ours to write. A template whose tables another stream's runs made is
        refused: their rows could not be told apart, and their records would go to one
        dead-letter output."""
        if self.dead is not None:
            self.dead.check_place()
        if self.fixed:
            self.holder.prepare(columns, partition_by)
        else:
            theirs = self._record().get("stream") if self.stream is not None and self.holder.exists() else None
            if theirs not in (None, self.stream):
                raise ForeignOutputError(
                    f"--output {self.uri}: its tables are stream {theirs}'s (recorded in {self.holder.uri}); "
                    "give each stream an output of its own"
                )
        if self.dead is not None:
            self.dead.prepare(DEAD_LETTERS)

    def partitioning(self) -> PartitionBy | None:
        return self.holder.partitioning() if self.fixed else None  # a template's tables have their own

    def file_layout(self, target_bytes: int) -> FileLayout:
        return self.holder.file_layout(target_bytes)

    def writes_batch_column(self) -> bool:
        return self.holder.writes_batch_column()  # the tables' format's

    def fields(self) -> pa.Schema | None:
        return self.holder.fields() if self.fixed else None  # a template's tables have their own

    def publish(self, record: CommitRecord, files: Sequence[StagedFile]) -> bool:
        """``files``: the batch's row files (a template's each naming its route)."""
        batch_id = record.batch_id
        if self.dead is None:  # raw rows: the one table alone
            return self.holder.publish(record, files)
        found = self._staged(batch_id)
        if found is None:  # the staging went: published meanwhile, or discarded
            if self.holder.committed(batch_id) is not None:
                return False
            raise discarded(batch_id)
        by_route, dead_files = self._by_route(files), found[1]
        members = [(route, member) for route, member in self._gates(by_route) if route is not None or dead_files]

        def publish(member: tuple[str | None, Stored]) -> bool:
            route, sink = member
            done = sink.publish(record, dead_files if route is None else by_route[route])
            emit(Event(DEAD_LETTERS_PUBLISHED, batch_id) if route is None else Event(TABLE_PUBLISHED, batch_id, route))
            return done

        # The gate alone: a discard fences it first, so a late publish stops there. Once it holds
        # the batch the batch is decided, and the rest commit side by side.
        published = [publish(members[0])] if members else []
        if members[1:]:
            with ThreadPoolExecutor(min(AT_ONCE, len(members) - 1), thread_name_prefix="publish") as pool:
                published += list(pool.map(publish, members[1:]))
        held = self.holder.publish(self._counted(record, by_route), self._held(by_route, dead_files))
        if not dead_files:
            self._tidy_dead(batch_id)
        return held or any(published)

    def _tidy_dead(self, batch_id: str) -> None:
        """A batch of no dead letter leaves nothing in a dead-letter output that is not the
        holder: its staging (the plan) and its empty data place go once the holder has the
        batch. (With dead letters, its own publish tidies them.)"""
        if self.dead is not None and self.dead is not self.holder:
            self.dead.staging(batch_id).delete_all()
            self.dead.data(batch_id).delete_all()

    def committed(self, batch_id: str) -> CommitRecord | None:
        record = self.holder.committed(batch_id)
        if record is not None or self.dead is None:
            return record
        if self.fixed and self.dead.committed(batch_id) is None:
            return None  # its one gate lacks it too: nothing to complete, no staging to read (the pair's order)
        found = self._staged(batch_id)
        if found is None:
            return self.holder.committed(batch_id)  # the staging went meanwhile: published, or discarded
        by_route, dead_files = found
        members = self._gates(by_route)
        record = next((r for _, member in members if (r := member.committed(batch_id)) is not None), None)
        if record is None:
            return None
        try:  # a crash came between two publishes, or the publisher is between them right now
            for route, member in members:
                if route is not None or dead_files:
                    member.publish(record, dead_files if route is None else by_route[route])
            self.holder.publish(self._counted(record, by_route), self._held(by_route, dead_files))
        except KinesisBatchError:
            if self.holder.committed(batch_id) is None:  # not the publisher's own completion meanwhile
                raise
        return self.holder.committed(batch_id) or record

    def _counted(self, record: CommitRecord, routes: Iterable[str]) -> CommitRecord:
        """The batch's record for the holder once every table holds it: with ``--changes``, each
        route's change counts as its own table's commit gives them (its merge counted them;
        kinesis_batch.output.changes), whichever table's record ``record`` is."""
        tables = [route for route, _ in self._gates(routes) if route is not None]
        if not tables or not any(shard.landing and shard.landing.keys for shard in record.shards):
            return record  # events, or one table: nothing counted at another table
        theirs = {route: self.table(route).committed(record.batch_id) for route in tables}
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
                self._settled(batch_id, fence)
            return False
        discarded_any = False
        routes = self._routes(batch_id)
        for _, member in self._gates(routes):  # the publish's order: the first is the gate
            if member.discard(batch_id, fence=fence):
                discarded_any = True
            elif member.committed(batch_id) is not None:  # a late publish got there first: decided
                if self._completed(batch_id):
                    self._settled(batch_id, fence)
                return False
        for route in sorted(self._targeted(batch_id) - set(routes)):  # files of a read that died before its results
            self.table(route).data(batch_id).delete_all()  # this batch's only: never published there
        return self.holder.discard(batch_id, fence=fence) or discarded_any

    def _settled(self, batch_id: str, fence: bool) -> None:
        """A published batch's bookkeeping goes (and a dead-letter output's unused staging)."""
        self.holder.discard(batch_id, fence=fence)
        if self.dead is not None and self.dead is not self.holder and self.dead.committed(batch_id) is None:
            self._tidy_dead(batch_id)

    def _completed(self, batch_id: str) -> bool | None:
        """:meth:`committed` (completing it): True; False: not published; None: its publisher is
        completing it this moment (published a member first), and needs its bookkeeping."""
        try:
            return self.committed(batch_id) is not None
        except LeaseLostError:  # committed() raises only for a batch a member holds: decided
            return None

    def last_batch(self) -> CommitRecord | None:
        return self.holder.last_batch()

    def bookkeeping(self) -> Place:
        return self.holder.bookkeeping()

    def data_files(self) -> list[DataFile]:
        """The files of every known route's table."""
        return [file for route in sorted(self.known) for file in self.table(route).data_files()]

    def check_place(self) -> None:
        if self.fixed:
            self.holder.check_place()
        if self.dead is not None:
            self.dead.check_place()
        for route in sorted(self.known):
            if self.table(route) is not self.holder:
                self.table(route).check_place()

    def exists(self) -> bool:
        return self.holder.exists()

    def is_ours(self) -> bool:
        return self.holder.is_ours()

    def location(self, batch_id: str) -> str:
        return self.holder.location(batch_id) if self.fixed else self.uri


def _adoptable(table: Stored) -> bool:
    """A table found at a new route's place that is this consumer's after all, though the record
    does not name it: one it published to (two runs adding names at once lost one), or one a
    run made, still empty, that a crash kept from the record."""
    return table.last_batch() is not None or (table.is_ours() and not table.data_files())


__all__ = ["AT_ONCE", "DECIDED", "NEW_ROUTES", "TABLES", "TARGETED", "RunSink"]
