"""What the table sinks (delta, iceberg) share: the marker, and publish and discard as one
check-then-commit protocol (:class:`TableSink`), which grows a decoded table's schema with the
batch it publishes. How a batch enters the table is the sink's publish mode, given when it is
made: appended (:class:`Appending`) or merged as changes (kinesis_batch.output.changes). The
one-line checks of bucket and schema: kinesis_batch.output.table_checks."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from kinesis_batch.columns import RAW, Columns, fields_of, schema_from_text
from kinesis_batch.errors import DependencyError, InvalidStateError, KinesisBatchError
from kinesis_batch.output.evolve import merged, normalize
from kinesis_batch.output.markers import MarkerArchive
from kinesis_batch.output.sink import Stored, discarded
from kinesis_batch.storage.layout import PartitionBy
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile

PUBLISH, DISCARD = "publish", "discard"
T = TypeVar("T")

#: Concurrent commits of one consumer (runs on disjoint shards) each reload and try again.
COMMIT_ATTEMPTS = 20


def marker(app: str, stream: str, batch_id: str, action: str, record: CommitRecord | None) -> dict[str, str]:
    """What a commit of ours carries in its metadata (Delta) or snapshot summary (Iceberg)."""
    body = {
        "kinesis_batch.app": app,
        "kinesis_batch.stream": stream,
        "kinesis_batch.batch_id": batch_id,
        "kinesis_batch.action": action,
    }
    if record is not None:
        body |= {"kinesis_batch.run_id": record.run_id, "kinesis_batch.commit_record": record.to_json(indent=None)}
    return body


class PublishMode(Protocol):
    """How a table sink's batches become part of its table: appended (:data:`APPEND`), or
    merged as changes (kinesis_batch.output.changes.Merging). Given to the sink when it is made;
    each call gets the sink, whose protocol (load, stage, check-then-commit) it works through."""

    def prepare(self, table: TableSink, columns: Columns | None, partition_by: str | None) -> None:
        """Sink.prepare, through the format's own (``table._prepare``)."""

    def publish(self, table: TableSink, record: CommitRecord, files: Sequence[StagedFile]) -> bool:
        """Sink.publish, through ``table._attempts``."""

    def tidy(self, table: TableSink, batch_id: str) -> None:
        """What goes once a batch landed."""

    def schema_files(self, files: Sequence[StagedFile]) -> Sequence[StagedFile]:
        """``files`` as the table's schema grows by them."""


class Appending:
    """The append publish mode: a batch's files are added to the table in one commit."""

    def prepare(self, table: TableSink, columns: Columns | None, partition_by: str | None) -> None:
        table._prepare(columns or RAW, partition_by)

    def publish(self, table: TableSink, record: CommitRecord, files: Sequence[StagedFile]) -> bool:
        added: list[Any] | None = None  # the files' entries, made (and checked there) once

        def commit(loaded: Any, target: pa.Schema | None) -> bool:
            nonlocal added
            if added is None:
                added = table._files(record, files)
            return table._commit(loaded, record.batch_id, added, record, target)

        return table._attempts(record.batch_id, files, commit)

    def tidy(self, table: TableSink, batch_id: str) -> None:
        """Its staging (the plan, the results). Its files stay: the commit made them the table's."""
        table.staging(batch_id).delete_all()

    def schema_files(self, files: Sequence[StagedFile]) -> Sequence[StagedFile]:
        return files


APPEND = Appending()


class TableSink(Stored):
    """Publish and discard on a table format whose commits carry our marker.

    ``app`` names the consumer (its lease table); the marker archive keeps its markers once the
    table's history expired them, and every lookup reads the archive after the table.

    Both load the table, read what its markers say of the batch, and commit through that same
    handle; the format makes a commit fail when a commit of ours landed since the handle was
    loaded (:meth:`_commit` returns False), and then we reload and decide again. So a late
    publish and another worker's discard of one batch serialise, and the second gives way. A
    discard commits its marker before it deletes a file, so a publish that finds a file gone
    finds the discard's marker too.
    """

    app: str

    def __init__(self, mode: PublishMode = APPEND) -> None:
        self.mode = mode
        self._published: dict[str, CommitRecord] = {}  # batch -> record, once found
        self._layout: tuple[PartitionBy | None] | None = None  # the table's layout, once read

    def prepare(self, columns: Columns | None = None, partition_by: str | None = None) -> None:
        """Sink.prepare, as the publish mode asks (a table of current state: its checks first)."""
        self.mode.prepare(self, columns, partition_by)

    @abstractmethod
    def _prepare(self, columns: Columns, partition_by: str | None) -> None:
        """The format's prepare (Sink.prepare's contract)."""

    def committed(self, batch_id: str) -> CommitRecord | None:
        """The format's lookup (:meth:`_lookup`), remembered once found: a published batch stays
        published (its marker outlives expiry in the archive), so a run asking again and again
        (publish, commit, release, its report) loads the table once for it."""
        known = self._published.get(batch_id)
        if known is None:
            known = self._lookup(batch_id)
            if known is not None:
                self._published[batch_id] = known
        return known

    @abstractmethod
    def _lookup(self, batch_id: str) -> CommitRecord | None:
        """The commit record of a published batch, from the table (or its marker archive)."""

    def partitioning(self) -> PartitionBy | None:
        """The table's layout, read once: a table keeps its layout (kinesis_batch.storage.layout)."""
        if self._layout is None:
            self._layout = (self._reading(self._read_partitioning),)
        return self._layout[0]

    @abstractmethod
    def _read_partitioning(self, table: Any) -> PartitionBy | None:
        """The loaded table's layout."""

    @abstractmethod
    def _load(self) -> Any:
        """A freshly loaded table handle."""

    @abstractmethod
    def _state(self, table: Any, batch_id: str) -> str | None:
        """PUBLISH, DISCARD or None: what the table's markers say of the batch."""

    @property
    def markers(self) -> MarkerArchive:
        """This consumer's markers that maintenance copied out of the table's history."""
        return MarkerArchive(self.bookkeeping(), self.app)

    def is_ours(self) -> bool:
        """Made by a run (its layout property), or holding a marker of ours: in a commit the
        table keeps, or in the archive maintenance copied them to."""
        return self._reading(self._marked) or bool(self.bookkeeping().child("_markers").folders())

    @abstractmethod
    def _marked(self, table: Any) -> bool:
        """The loaded table says kinesis-batch made it, or a commit of ours is in its history."""

    def _known(self, table: Any, batch_id: str) -> str | None:
        """What the table's markers say of the batch, else what the archive kept of them (read
        after the table: maintenance archives a marker before it expires its commit)."""
        state = self._state(table, batch_id)
        if state is not None:
            return state
        archived = self.markers.get(batch_id)
        return archived.action if archived is not None else None

    def _archived_record(self, batch_id: str) -> CommitRecord | None:
        archived = self.markers.get(batch_id)
        return archived.record() if archived is not None and archived.action == PUBLISH else None

    def _archived_latest(self) -> CommitRecord | None:
        latest = self.markers.latest()
        return latest.record() if latest is not None else None

    @abstractmethod
    def _files(self, record: CommitRecord, files: Sequence[StagedFile]) -> list[Any]:
        """What the batch's commit adds for ``files``, each checked to be there."""

    @abstractmethod
    def _schema(self, table: Any) -> pa.Schema:
        """The loaded table's columns, as Arrow types."""

    def _evolve(self, table: Any, target: pa.Schema) -> bool:
        """Grow the table to ``target`` ahead of the data's commit, in a commit of its own; True
        if that committed (the table moved: reload, check again). Formats that grow the schema in
        the data's own commit (Iceberg) do nothing here."""
        return False

    def _staged(self, batch_id: str, files: Sequence[StagedFile]) -> dict[str, int]:
        """Sizes of ``files``, each checked to be there (a table must never name a missing file),
        after deleting what other attempts left."""
        names = {file.name for file in files}
        sizes = self._keep_only(batch_id, names)
        missing = sorted(names - set(sizes))
        if missing:
            raise InvalidStateError(f"batch {batch_id}: {len(missing)} staged file(s) are missing, e.g. {missing[0]}")
        return sizes

    @abstractmethod
    def _commit(
        self, table: Any, batch_id: str, files: list[Any], record: CommitRecord | None, target: pa.Schema | None = None
    ) -> bool:
        """One commit through ``table`` with the batch's marker (publish with ``record``; without
        it, a discard's marker alone), the schema grown to ``target`` if given. False when the
        table moved since ``table`` was loaded."""

    def fields(self) -> pa.Schema | None:
        return fields_of(normalize(self._reading(self._schema)))

    def _target(self, table: Any, files: Sequence[StagedFile]) -> pa.Schema | None:
        """The table's schema once it holds ``files`` (None: as it is)."""
        schemas = [schema_from_text(file.schema) for file in self.mode.schema_files(files) if file.schema]
        if not schemas:
            return None
        current = self._schema(table)
        target = merged(current, schemas, widen=self.widens, where=self.uri)
        return target if target != normalize(current) else None

    def _moved_under(self, exc: Exception) -> bool:
        """``exc``, raised loading or reading the loaded table, means it moved under us (reload,
        decide again); the formats that read their tables lazily say when."""
        return False

    def _reading(self, read: Callable[[Any], T]) -> T:
        """``read`` of a freshly loaded table, loaded again while the table moves under the load
        (:meth:`_moved_under`: a Delta log cleaned up between the load's listing and its reads)."""
        moved: Exception | None = None
        for _ in range(COMMIT_ATTEMPTS):
            try:
                return read(self._load())
            except Exception as exc:
                if not self._moved_under(exc):
                    raise
                moved = exc
        raise DependencyError(
            f"cannot read {self.uri}: it moved under {COMMIT_ATTEMPTS} loads in a row; retry later"
        ) from moved

    def _unpublished(self, table: Any, batch_id: str) -> bool:
        """What a publish checks first on a loaded table: False if the batch is already in it;
        LeaseLostError if it was discarded."""
        state = self._known(table, batch_id)
        if state == DISCARD:
            raise discarded(batch_id)
        return state != PUBLISH

    def publish(self, record: CommitRecord, files: Sequence[StagedFile]) -> bool:
        return self.mode.publish(self, record, files)

    def _attempts(
        self, batch_id: str, files: Sequence[StagedFile], commit: Callable[[Any, pa.Schema | None], bool]
    ) -> bool:
        """The publish's check-then-commit loop: on a freshly loaded table, the batch checked
        unpublished, the schema grown to hold ``files``, then ``commit`` (False: the table moved,
        try again); the staging goes once it landed."""
        for _ in range(COMMIT_ATTEMPTS):
            try:
                table = self._load()
                if not self._unpublished(table, batch_id):
                    return False
                target = self._target(table, files)
                if target is not None and self._evolve(table, target):
                    continue  # the schema's own commit: check the batch's state again on the new table
                done = commit(table, target)
            except KinesisBatchError as exc:
                if self._moved_under(exc):  # our translation of the table moving under the load
                    continue
                # A file went missing: did another worker discard the batch?
                if self._reading(lambda loaded: self._known(loaded, batch_id)) == DISCARD:
                    raise discarded(batch_id) from None
                raise
            except Exception as exc:
                if not self._moved_under(exc):
                    raise
                continue
            if done:
                self._tidy(batch_id)
                return True
        raise DependencyError(f"could not commit batch {batch_id} to {self.uri}: {COMMIT_ATTEMPTS} conflicts in a row")

    def _tidy(self, batch_id: str) -> None:
        """What goes once a batch landed (the publish mode's say)."""
        self.mode.tidy(self, batch_id)

    def discard(self, batch_id: str, *, fence: bool = True) -> bool:
        if not (self.staging(batch_id).exists() or self.data(batch_id).exists()):
            return False  # nothing staged, so nothing a late publish could commit
        for _ in range(COMMIT_ATTEMPTS):
            try:
                table = self._load()
                state = self._known(table, batch_id)
                if state == PUBLISH:
                    self._tidy(batch_id)
                    return False
                if state == DISCARD or not fence or self._commit(table, batch_id, [], None):
                    break
            except Exception as exc:
                if not self._moved_under(exc):
                    raise
        else:
            raise DependencyError(f"could not discard batch {batch_id} in {self.uri}: {COMMIT_ATTEMPTS} conflicts")
        self.data(batch_id).delete_all()
        self.staging(batch_id).delete_all()
        return True


__all__ = ["APPEND", "COMMIT_ATTEMPTS", "DISCARD", "PUBLISH", "Appending", "PublishMode", "TableSink", "marker"]
