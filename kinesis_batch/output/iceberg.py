"""The ``iceberg`` sink: an Iceberg table ``NAMESPACE.TABLE`` in a pyiceberg catalog.

Layout under the table's location::

    metadata/                   the table's metadata (the catalog points at the current file)
    data/<batch>/part-*.parquet the Spark tasks' files; in the table once the batch's snapshot adds them
    _kinesis_batch/<batch>/     the run's bookkeeping (plan manifest, task results)

The marker. Every snapshot of ours carries in its summary the batch id, the action
(``publish``, or ``discard`` for an empty snapshot that only fences), run id, stream and
commit record. Snapshot summaries live in the table metadata the catalog hands back, so
"is batch B in the table?" is answered from one freshly loaded table. (Expiring snapshots
drops old markers: keep them for longer than a run can stay pending.)

Fencing (the protocol is :class:`~kinesis_batch.output.tables.TableSink`'s). Every commit of
ours asserts that ``main`` still points at the snapshot it was checked against (pyiceberg adds
that requirement to an append), and the catalog's compare-and-swap enforces it. pyiceberg's
own retry would re-apply the append on top of a newer snapshot without our check (it re-added
files and doubled rows), so the table property ``commit.retry.num-retries`` is set to 0 and a
conflict comes back to us: reload, read the markers again, then decide. A late publish racing
another worker's discard therefore sees the discard's snapshot, or makes the discard reload and
see the publish: one of the two wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import pyarrow as pa

from kinesis_batch.aws import S3Settings
from kinesis_batch.columns import Columns
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.output.catalogs import catalog_errors, create_namespace, load_catalog, table_folder
from kinesis_batch.output.changes import Merge, Merging
from kinesis_batch.output.datafiles import DataFile
from kinesis_batch.output.formats import validate_output
from kinesis_batch.output.sink import check_batch_id, check_place_of
from kinesis_batch.output.table_checks import check_bucket, check_schema
from kinesis_batch.output.tables import APPEND, DISCARD, PUBLISH, TableSink, marker
from kinesis_batch.storage.layout import PartitionBy, choose, spelled
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile

NO_RETRIES = {"commit.retry.num-retries": "0"}
PARTITION_BY = "kinesis_batch.partition_by"  # set when a run makes the table: the table is ours


def split_identifier(identifier: str) -> tuple[str, str]:
    """``NAMESPACE.TABLE`` (the namespace may itself be dotted) -> (namespace, table)."""
    validate_output("iceberg", identifier, None)
    namespace, _, table = identifier.rpartition(".")
    return namespace, table


class IcebergSink(TableSink):
    format = "iceberg"

    def __init__(
        self,
        identifier: str,
        catalog: Any,
        *,
        app: str,
        stream: str,
        s3: S3Settings | None = None,
        merge: Merge | None = None,
    ) -> None:
        """``merge``: a table of current state (its batches are merged as changes), else appended."""
        from kinesis_batch.output.iceberg_changes import IcebergMerge

        super().__init__(Merging(merge, IcebergMerge(self)) if merge is not None else APPEND)
        self.namespace, self.name = split_identifier(identifier)
        self.identifier = identifier
        self.catalog = catalog
        self.app = app
        self.stream = stream
        self.s3 = s3 or S3Settings()
        self.uri = f"iceberg://{catalog.name}/{identifier}"
        self._location: Place | None = None

    # -- places, under the table's own location -----------------------------------------------

    def root(self) -> Place:
        if self._location is None:
            self._location = Place(self._load().location(), self.s3)
        return self._location

    def staging(self, batch_id: str) -> Place:
        return self._root_or_new().child("_kinesis_batch", check_batch_id(batch_id))

    def _root_or_new(self) -> Place:
        """The table's place; before the first run makes it, where its catalog will make it (a job
        run's checks ask for the staging before the run prepares the output)."""
        if self._location is not None:
            return self._location
        table = self._existing()
        location = table.location() if table is not None else self._new_location()
        if location is None:  # a catalog whose server decides where (REST): known once it is made
            raise self._missing()
        if table is None:
            return Place(location, self.s3)
        self._location = Place(location, self.s3)
        return self._location

    def _missing(self) -> InvalidStateError:
        return InvalidStateError(f"no Iceberg table {self.identifier} (a run creates it)")

    def _existing(self) -> Any | None:
        """The table, or None before the first run makes it."""
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        with catalog_errors(f"Iceberg table {self.identifier}"):
            try:
                return self.catalog.load_table(self.identifier)
            except (NoSuchTableError, NoSuchNamespaceError):
                return None

    def data(self, batch_id: str) -> Place:
        return self.root().child("data", check_batch_id(batch_id))

    # -- the table --------------------------------------------------------------------------------

    def _prepare(self, columns: Columns, partition_by: str | None) -> None:
        from pyiceberg.exceptions import (
            CommitFailedException,
            TableAlreadyExistsError,
        )

        what = f"Iceberg table {self.identifier}"
        table = self._existing()
        if table is None:
            self._check_new_location()  # before the namespace or the table is made
        with catalog_errors(what):
            create_namespace(self.catalog, self.namespace)
            existing = table_partitioning(table) if table else None
            partition = choose(partition_by, existing, new=table is None, where=what)
            if table is None:
                schema = columns.schema(batch_column=True)
                if partition is not None:
                    partition.check_source(schema, what)
                try:  # the table and its spec in one commit: no reader sees it unpartitioned
                    with self.catalog.create_table_transaction(
                        self.identifier, schema=schema, properties={**NO_RETRIES, PARTITION_BY: spelled(partition)}
                    ) as create:
                        if partition is not None:
                            with create.update_spec() as spec:
                                spec.add_field(partition.source, partition.transform, partition.column)
                except (TableAlreadyExistsError, CommitFailedException):
                    pass  # another run made it meanwhile (a catalog says so either way): its layout is checked below
                table = self.catalog.load_table(self.identifier)  # NoSuchTableError: the failure was another
                partition = choose(partition_by, table_partitioning(table), new=False, where=what)
            self._layout = (partition,)  # the read step asks next: a table keeps its layout
        missing = check_schema(self._schema(table), what, columns)
        with catalog_errors(f"Iceberg table {self.identifier}"), table.transaction() as tx:
            if table.properties.get("commit.retry.num-retries") != "0":  # an existing table of someone else's
                tx.set_properties(**NO_RETRIES)
            if missing:  # a decoded table the user made: our columns, and declared fields it lacks
                with tx.update_schema() as update:
                    update.union_by_name(pa.schema(missing))
        if self.root().on_s3:
            check_bucket(self.root())

    def _schema(self, table: Any) -> pa.Schema:
        return table.schema().as_arrow()

    def _read_partitioning(self, table: Any) -> PartitionBy | None:
        return table_partitioning(table)

    def _load(self) -> Any:
        from pyiceberg.exceptions import NoSuchTableError

        with catalog_errors(f"Iceberg table {self.identifier}"):
            try:
                return self.catalog.load_table(self.identifier)
            except NoSuchTableError as exc:
                raise self._missing() from exc

    def _state(self, table: Any, batch_id: str) -> str | None:
        """'publish', 'discard' or None: what the table's snapshots say of the batch."""
        for snapshot in table.snapshots():
            summary = snapshot.summary.additional_properties if snapshot.summary else {}
            if summary.get("kinesis_batch.app") == self.app and summary.get("kinesis_batch.batch_id") == batch_id:
                return str(summary.get("kinesis_batch.action"))
        return None

    def _commit(
        self, table: Any, batch_id: str, files: list[Any], record: CommitRecord | None, target: pa.Schema | None = None
    ) -> bool:
        """One snapshot with the batch's marker on top of the snapshot ``table`` was checked at,
        in the same transaction as the schema's growth to ``target`` (new columns, widened
        ones); False if the table moved since (reload and decide again)."""
        from pyiceberg.exceptions import CommitFailedException

        properties = marker(self.app, self.stream, batch_id, PUBLISH if record else DISCARD, record)
        try:
            with catalog_errors(f"Iceberg table {self.identifier}"), table.transaction() as tx:
                if target is not None:
                    with tx.update_schema() as update:
                        update.union_by_name(target)
                if files:
                    tx.add_files(files, snapshot_properties=properties, check_duplicate_files=False)
                else:
                    with tx.update_snapshot(snapshot_properties=properties).fast_append():
                        pass  # an empty snapshot: the marker alone
        except CommitFailedException:
            return False
        return True

    def _files(self, record: CommitRecord, files: Sequence[StagedFile]) -> list[str]:
        data = self.data(record.batch_id)
        self._staged(record.batch_id, files)
        return [file_uri(data.child(name)) for name in sorted(file.name for file in files)]

    def _lookup(self, batch_id: str) -> CommitRecord | None:
        """From the snapshots' summaries, or the marker archive once expiry removed the snapshot."""
        for summary in self._summaries(self._load()):
            if summary.get("kinesis_batch.batch_id") == batch_id:
                return CommitRecord.from_json(summary["kinesis_batch.commit_record"])
        return self._archived_record(batch_id)

    def last_batch(self) -> CommitRecord | None:
        newest = next(iter(self._summaries(self._load())), None)
        if newest is None:
            return self._archived_latest()
        return CommitRecord.from_json(newest["kinesis_batch.commit_record"])

    def bookkeeping(self) -> Place:
        return self.root().child("_kinesis_batch")

    def check_place(self) -> None:
        """A table the catalog has is an Iceberg table (ours, or one the user made for us); for a
        new one, where the catalog would make it must hold nothing else."""
        with catalog_errors(f"Iceberg table {self.identifier}"):
            if self.catalog.table_exists(self.identifier):
                return
        self._check_new_location()

    def exists(self) -> bool:
        with catalog_errors(f"Iceberg table {self.identifier}"):
            return bool(self.catalog.table_exists(self.identifier))

    def _check_new_location(self) -> None:
        with catalog_errors(f"Iceberg table {self.identifier}"):
            location = self._new_location()
        if location is not None:
            where = f"--output {self.identifier} (a new table at {location})"
            new = Place(location, self.s3)
            if new.on_s3:  # before the namespace or the table is made
                check_bucket(new)
            check_place_of(self.format, new, where)

    def _new_location(self) -> str | None:
        """Where the catalog would make the table; None where its server decides (REST catalogs)."""
        from pyiceberg.exceptions import NoSuchNamespaceError

        resolve = getattr(self.catalog, "_resolve_table_location", None)  # pyiceberg's metastore catalogs
        if resolve is None:
            return None
        try:
            return str(resolve(None, self.namespace, self.name))
        except NoSuchNamespaceError:  # a new namespace: under the warehouse, as pyiceberg would put it
            warehouse = str(self.catalog.properties.get("warehouse") or "")
            kind = str(self.catalog.properties.get("type") or "")
            return table_folder(warehouse, self.namespace, self.name, kind) if warehouse else None
        except ValueError:  # no warehouse: creating the table fails with its own line
            return None

    def _marked(self, table: Any) -> bool:
        if PARTITION_BY in table.properties:
            return True
        summaries = (snapshot.summary.additional_properties for snapshot in table.snapshots() if snapshot.summary)
        return any(summary.get("kinesis_batch.action") in (PUBLISH, DISCARD) for summary in summaries)

    def data_files(self) -> list[DataFile]:
        return [value for value, _ in current_files(self._load())]

    def errors(self) -> AbstractContextManager[None]:
        """The catalog's and pyiceberg's errors in the block as one line (kinesis_batch.errors)."""
        return catalog_errors(f"Iceberg table {self.identifier}")

    def _summaries(self, table: Any) -> list[dict[str, str]]:
        """The summaries of our published snapshots, newest first."""
        snapshots = sorted(table.snapshots(), key=lambda snapshot: snapshot.timestamp_ms, reverse=True)
        summaries = [dict(s.summary.additional_properties) for s in snapshots if s.summary]
        ours = [s for s in summaries if s.get("kinesis_batch.app") == self.app]
        return [s for s in ours if s.get("kinesis_batch.action") == PUBLISH]


def table_partitioning(table: Any) -> PartitionBy | None:
    """The table's current partition spec as a layout; one line if it is one we cannot write
    (several fields, or another transform: a table made elsewhere)."""
    fields = table.spec().fields
    if not fields:
        return None
    schema = table.schema()
    spelled_ = ", ".join(f"{field.transform}({schema.find_column_name(field.source_id)})" for field in fields)
    transform = str(fields[0].transform)
    if len(fields) > 1 or transform not in ("day", "hour", "identity"):
        raise InvalidStateError(
            f"Iceberg table {table.name()} is partitioned by {spelled_}, which kinesis-batch does not write "
            "(it writes the layouts of --partition-by); choose another table"
        )
    return PartitionBy(transform, schema.find_column_name(fields[0].source_id))  # type: ignore[arg-type]


def current_files(table: Any) -> list[tuple[DataFile, Any]]:
    """The table's data files now: each as a value and as pyiceberg's own DataFile."""
    partition = table_partitioning(table)
    found = []
    for task in table.scan().plan_files():
        file = task.file
        value = partition.text(file.partition[0]) if partition is not None and len(file.partition) else None
        found.append((DataFile(file.file_path, int(file.file_size_in_bytes), int(file.record_count), value), file))
    return found


def file_uri(place: Place) -> str:
    """A file's URI as Iceberg metadata names it (``file://`` for a local one)."""
    return place.uri if place.on_s3 else f"file://{place.uri}"


def open_table(
    where: str, *, catalog: str | None, app: str, stream: str, s3: S3Settings, merge: Merge | None
) -> IcebergSink:
    """The format's sink (kinesis_batch.output.formats): the table ``where`` (NAMESPACE.TABLE)
    of the pyiceberg catalog ``catalog``."""
    return IcebergSink(where, load_catalog(catalog, s3), app=app, stream=stream, s3=s3, merge=merge)


__all__ = ["IcebergSink", "current_files", "file_uri", "open_table", "split_identifier", "table_partitioning"]
