"""A table of current state (``--changes``): the merge publish mode, :class:`Merging`. A
batch's publish is a merge of its changes into the table, in one commit with the batch's
marker, on the table sinks' own check-then-commit protocol (kinesis_batch.output.tables). The
mode is composed with the format's parts (:class:`MergeParts`), not mixed into its class.

Publish, on each attempt, against one freshly loaded table:
1. the batch's staged changes (each task's pages already collapsed per key) fold to one per key
   across its shards (kinesis_batch.changes.fold);
2. what the table and its tombstones hold for those keys is read, and the changes newer than it
   are chosen (kinesis_batch.changes.apply); the batch's deletes are written as tombstones
   (kinesis_batch.output.tombstones: facts of the source, true whatever becomes of the batch);
3. the format merges them (:meth:`MergeParts.merge`): the rows of the changed keys replaced or
   deleted, the new ones inserted, with the marker, failing if the table moved since it was
   loaded (then reload and decide again). A batch none of whose changes is newer commits the
   marker alone.

The commit record carries each shard's counts (inserted, updated, deleted, expired, ignored,
duplicates, superseded) in its landing, so the history, the status views and the UI show them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from kinesis_batch.changes.apply import Decision, decide, held
from kinesis_batch.changes.fold import Folded, newest
from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.columns import CHANGE_OP, CHANGE_POSITION, Columns, schema_from_text, schema_to_text
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.landing import Landing
from kinesis_batch.output.tombstones import Tombstones
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile

if TYPE_CHECKING:
    from kinesis_batch.output.tables import TableSink

#: The table property that says a table is one of current state, and its key.
KEY_PROPERTY = "kinesis_batch.changes_key"
#: How many keys a look-up of the table's rows names one by one; more are read by their range
#: and kept to the batch's keys as they come (a long IN list is slow to plan, or crashes).
LISTED = 1_000
#: A new table's layout unless ``--partition-by`` says: unpartitioned, since partitioning by
#: arrival would move a key's row between partitions on every update.
NEW_TABLE_LAYOUT = "none"
#: What is read of the table's rows to compare orders.
ORDER_COLUMNS = ("change_position", "lineage_depth", "sequence_number", "sub_sequence_number")


@dataclass(frozen=True)
class Merge:
    """What a table of current state is opened with: its change settings, and in a routed output
    the route whose table it is (its key, and its counts, are that route's)."""

    changes: ChangeSettings
    route: str | None = None


class MergeParts(Protocol):
    """What a format gives the merge mode (kinesis_batch.output.delta_changes, .iceberg_changes)."""

    def existing(self) -> Any:
        """The loaded table, None if there is none yet."""

    def key_property(self, table: Any) -> str | None:
        """The table's KEY_PROPERTY (None: none)."""

    def set_key_property(self, key: Sequence[str]) -> None:
        """Record the table's key (a commit of its own)."""

    def rows_of(self, table: Any, key: Sequence[str], keys: pa.Table) -> pa.Table:
        """The key and ORDER_COLUMNS of the table's rows whose key is among ``keys``."""

    def merge(
        self, table: Any, decision: Decision, key: Sequence[str], record: CommitRecord, target: pa.Schema | None
    ) -> bool:
        """Replace or delete the rows of the decision's keys, insert the new ones, with the batch's
        marker, through ``table``; False if the table moved since it was loaded."""


class Merging:
    """The merge publish mode (kinesis_batch.output.tables.PublishMode) of a table sink whose
    batches are changes: the settings (``merge``) and the format's own parts (``parts``) are
    given, so one mode serves every format that merges."""

    def __init__(self, merge: Merge, parts: MergeParts) -> None:
        self.changes, self.route, self.parts = merge.changes, merge.route, parts

    def prepare(self, table: TableSink, columns: Columns | None, partition_by: str | None) -> None:
        """Refuse a table that holds appended events or another key; then the format's prepare,
        with the position column (``columns`` None: decoded rows, no field declared); a new table
        is unpartitioned unless asked."""
        columns = columns or Columns(fields=None)
        key = self.changes.key
        existing = self.parts.existing()
        if existing is not None and table._marked(existing):
            if CHANGE_POSITION.name not in table._schema(existing).names:
                raise InvalidStateError(
                    f"--changes: {table.uri} holds events appended by runs without --changes; "
                    "a table of current state needs a table of its own"
                )
            said = self.parts.key_property(existing)
            if key and said and said.split(",") != list(key):
                raise InvalidStateError(f"--changes: {table.uri} is keyed by {said}, not {','.join(key)}")
        layout = partition_by or (None if existing is not None else NEW_TABLE_LAYOUT)
        table._prepare(replace(columns, changes=True), layout)
        loaded = table._load()
        if key and self.parts.key_property(loaded) is None and set(key) <= set(table._schema(loaded).names):
            self.parts.set_key_property(key)  # a declared schema's key; else the first batch with rows sets it

    def publish(self, table: TableSink, record: CommitRecord, files: Sequence[StagedFile]) -> bool:
        """A batch of no change (every record a dead letter, or skipped) commits the marker
        alone, with its counts, and needs no key: it never fails on a key no record had, nor
        gives the table one."""
        batch_id = record.batch_id
        folded: Folded | None = None  # the batch folded across its shards, once
        written = False

        def merge(loaded: Any, target: pa.Schema | None) -> bool:
            nonlocal folded, written
            if folded is None:
                staged = self._staged_changes(table, record, files, loaded)
                folded = newest(staged, self._key(loaded, record)) if staged.num_rows else Folded(staged)
            if folded.rows.num_rows == 0:
                counted = _counted(record, folded, _NOTHING, self.route)
                if not self.parts.merge(loaded, _NOTHING, (), counted, None):
                    return False
                table._published[batch_id] = counted
                return True
            key = self._key(loaded, record)
            keys = folded.rows.select(list(key))
            have = set(table._schema(loaded).names)  # a new table gets its key columns with the first batch
            rows = self.parts.rows_of(loaded, key, keys) if have >= set(key) else keys.slice(0, 0)
            decision = decide(folded.rows, key, held(rows, self._tombstones(table, key, keys), keys))
            if not written:
                Tombstones(table.bookkeeping()).write(batch_id, decision.deletes, key)
                written = True
            counted = _counted(record, folded, decision, self.route)
            if not self.parts.merge(loaded, decision, key, counted, target):
                return False
            if self.parts.key_property(loaded) is None:  # as loaded before the merge: no second load
                self.parts.set_key_property(key)
            table._published[batch_id] = counted
            return True

        return table._attempts(batch_id, files, merge)

    def tidy(self, table: TableSink, batch_id: str) -> None:
        """The staging, and the batch's staged changes too: the merge wrote the rows they left
        into files of its own, so they are no part of the table (a plain Parquet reader of the
        folder would see every change, deleted rows included)."""
        table.staging(batch_id).delete_all()
        table.data(batch_id).delete_all()

    def schema_files(self, files: Sequence[StagedFile]) -> Sequence[StagedFile]:
        """The staged files as the table's schema grows by them: without their operation column
        (the staged files' only)."""
        return [replace(file, schema=_without_op(file.schema)) for file in files]

    # -- helpers ----------------------------------------------------------------------------------

    def _key(self, table: Any, record: CommitRecord) -> tuple[str, ...]:
        """The key: the settings', the table's, or (DynamoDB) the one the tasks learned."""
        if self.changes.key:
            return self.changes.key
        said = self.parts.key_property(table)
        if said:
            return tuple(said.split(","))
        learned = {key for shard in record.shards if shard.landing and (key := self._learned(shard.landing))}
        if len(learned) > 1:
            raise InvalidStateError(
                f"batch {record.batch_id}: its shards' records have different keys {sorted(learned)}"
            )
        if not learned:
            raise InvalidStateError(f"batch {record.batch_id}: no key known (give --key)")
        return learned.pop()

    def _learned(self, landing: Landing) -> tuple[str, ...]:
        """The key a shard's tasks learned (DynamoDB's ``Keys``): a routed table's own."""
        return tuple(landing.keys.get(self.route, ())) if self.route is not None else tuple(landing.key)

    def _staged_changes(
        self, table: TableSink, record: CommitRecord, files: Sequence[StagedFile], loaded: Any
    ) -> pa.Table:
        """The batch's changes, each file's partition value as a column where the file lacks it."""
        data = table.data(record.batch_id)
        table._staged(record.batch_id, files)
        partition = table.partitioning()
        tables = []
        for file in files:
            rows = pq.read_table(data.child(file.name).path, filesystem=data.filesystem())
            if partition is not None and partition.column not in rows.schema.names:
                kind = table._schema(loaded).field(partition.column).type
                value = pa.array([file.partition] * rows.num_rows, type=pa.string()).cast(kind)
                rows = rows.append_column(pa.field(partition.column, kind), value)
            tables.append(rows)
        if not tables:
            return pa.table({CHANGE_OP.name: pa.array([], pa.string())})
        return pa.concat_tables(tables, promote_options="permissive")

    def _tombstones(self, table: TableSink, key: Sequence[str], keys: pa.Table) -> pa.Table:
        found = Tombstones(table.bookkeeping()).read(key, keys)
        return found if found is not None else keys.slice(0, 0)


#: A batch with no change to merge.
_NOTHING = Decision(pa.table({}), pa.table({}), {})


def _without_op(text: str | None) -> str | None:
    if not text:
        return text
    schema = schema_from_text(text)
    return (
        schema_to_text(schema.remove(schema.get_field_index(CHANGE_OP.name)))
        if CHANGE_OP.name in schema.names
        else text
    )


def _counted(record: CommitRecord, folded: Folded, decision: Decision, route: str | None) -> CommitRecord:
    """``record`` with each shard's change counts (the tasks' own, the batch's folding, the
    merge's); a routed table's (``route``) are its own, in the landing's ``table_changes``."""
    shards = []
    for shard in record.shards:
        landing = shard.landing or Landing()
        said = landing.table_changes.get(route, {}) if route is not None else landing.changes
        counts: Counter[str] = Counter(said)
        counts.update(folded.dropped.get(shard.shard_id, Counter()))
        counts.update(decision.counts.get(shard.shard_id, Counter()))
        changes = dict(sorted(counts.items()))
        if route is None:
            landing = replace(landing, changes=changes)
        else:
            landing = replace(landing, table_changes={**landing.table_changes, route: changes})
        shards.append(replace(shard, landing=landing))
    return replace(record, shards=tuple(shards))


__all__ = ["KEY_PROPERTY", "LISTED", "NEW_TABLE_LAYOUT", "ORDER_COLUMNS", "Merge", "MergeParts", "Merging"]
