"""The ``delta`` sink: a Delta Lake table (local path or ``s3://``), committed with deltalake.

Layout under the table root::

    _delta_log/                 the table's log (one commit per published batch)
    data/<batch>/part-*.parquet the Spark tasks' files; in the table once the batch's commit adds them
                                (a partitioned table: one partition value each, in the add action)
    _kinesis_batch/<batch>/     the run's bookkeeping (plan manifest, task results); never read by readers

The marker. Every commit of ours carries an app transaction ``(kinesis-batch/<lease table>/<batch>,
version)`` and, in the commit's custom metadata, the batch id, run id, stream and commit record.
Version 1 means "published", version 0 "discarded". Delta keeps the newest version per app id
in the table's state, so "is batch B in the table?" is one look-up on a freshly loaded table.

Every commit of ours also moves a second app transaction, ``kinesis-batch/<lease table>``, to
the consumer's next batch number (it only grows; the commit metadata repeats it). It is not
what recovery asks: two runs of one consumer on disjoint shards commit in either order, so a
high-water number alone would let one batch hide another from the "already published?" check.
It makes each check-then-commit below serialise with all of the consumer's others.

Fencing (the protocol is :class:`~kinesis_batch.output.tables.TableSink`'s). deltalake does not
enforce app-transaction versions; we do: publish and discard load the table, read the batch's
version, and commit through that same handle. Two commits that carry the same app id conflict
(the second fails with CommitFailedError; deltalake does not retry it), so a late publish and
another worker's discard of one batch serialise: the second reloads and gives way."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from kinesis_batch.aws import S3Settings
from kinesis_batch.columns import Columns
from kinesis_batch.errors import InvalidStateError, from_storage
from kinesis_batch.output.changes import Merge, Merging
from kinesis_batch.output.datafiles import DataFile
from kinesis_batch.output.delta_log import CleanedLogMoves
from kinesis_batch.output.evolve import additions
from kinesis_batch.output.sink import check_batch_id, check_place_of
from kinesis_batch.output.table_checks import check_bucket, check_schema
from kinesis_batch.output.tables import APPEND, DISCARD, PUBLISH, TableSink, marker
from kinesis_batch.storage.file_stats import delta_stats
from kinesis_batch.storage.layout import PartitionBy, choose, spelled
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile

PUBLISHED, DISCARDED = 1, 0
BATCH_NUMBER = "kinesis_batch.batch_number"
PARTITION_BY = "kinesis_batch.partition_by"  # the table's layout, in its configuration
#: What a table we create is made with. A checkpoint every 10 commits (Delta's own default;
#: deltalake's is 100): an hourly writer's every load reads at most 10 log entries. No writer
#: cleans the log when it checkpoints (deltalake's default does): only maintenance does, after it
#: archived the batch markers the clean-up drops (kinesis_batch.output.markers).
TABLE_PROPERTIES = {"delta.checkpointInterval": "10", "delta.enableExpiredLogCleanup": "false"}


class DeltaSink(CleanedLogMoves, TableSink):
    format = "delta"
    widens = False  # deltalake cannot write Delta's type-widening feature

    def __init__(
        self, uri: str, *, app: str, stream: str, s3: S3Settings | None = None, merge: Merge | None = None
    ) -> None:
        """``merge``: a table of current state (its batches are merged as changes), else appended."""
        from kinesis_batch.output.delta_changes import DeltaMerge

        super().__init__(Merging(merge, DeltaMerge(self)) if merge is not None else APPEND)
        self.root = Place(uri, s3 or S3Settings())
        self.uri = self.root.uri
        self.app, self.stream = app, stream
        self._options = self.root.s3.object_store_options() if self.root.on_s3 else None

    def staging(self, batch_id: str) -> Place:
        return self.root.child("_kinesis_batch", check_batch_id(batch_id))

    def data(self, batch_id: str) -> Place:
        return self.root.child("data", check_batch_id(batch_id))

    def app_id(self, batch_id: str) -> str:
        return f"kinesis-batch/{self.app}/{batch_id}"

    @property
    def consumer_app_id(self) -> str:
        return f"kinesis-batch/{self.app}"

    # -- the table --------------------------------------------------------------------------------

    def _prepare(self, columns: Columns, partition_by: str | None) -> None:
        from deltalake import DeltaTable

        if self.root.on_s3:
            check_bucket(self.root)
        what = f"Delta table {self.uri}"
        existing = self._load(missing_ok=True)
        if existing is None:  # no Delta table: nothing else may be there either
            self.check_place()
        layout = self._read_partitioning(existing) if existing else None
        partition = choose(partition_by, layout, new=existing is None, where=what)
        if existing is None:
            schema = columns.schema(batch_column=True)
            if partition is not None:
                partition.check_source(schema, what)
                if partition.transform != "identity":  # a derived column, filled from the log
                    schema = schema.append(pa.field(partition.column, partition.column_type))
            try:
                DeltaTable.create(
                    self.uri,
                    schema=schema,
                    mode="ignore",
                    partition_by=[partition.column] if partition else None,
                    configuration={PARTITION_BY: spelled(partition), **TABLE_PROPERTIES},
                    raise_if_key_not_exists=False,  # our own property: deltalake knows only its own
                    storage_options=self._options,
                )
            except Exception as exc:  # deltalake raises its own OSError/DeltaError kinds
                raise from_storage(exc, f"cannot create the {what}", remote=self.root.on_s3) from exc
        table = self._load()
        partition = self._read_partitioning(table)
        self._layout = (partition,)  # the read step asks next: a table keeps its layout
        derived = partition.column if partition and partition.transform != "identity" else None
        missing = check_schema(self._schema(table), what, columns, derived=derived)
        if missing:
            self._evolve(table, pa.schema([*self._schema(table), *missing]))

    def fields(self) -> pa.Schema | None:
        """The decoded fields, without a derived partition column (the files never hold it)."""
        fields = super().fields()
        partition = self.partitioning()
        if fields is None or partition is None or partition.transform == "identity":
            return fields
        return pa.schema([field for field in fields if field.name != partition.column])

    def _read_partitioning(self, table: Any) -> PartitionBy | None:
        """The table's layout: what our configuration says, checked against its partition columns
        (a table made elsewhere: none, or one we cannot fill)."""
        metadata = table.metadata()
        columns = list(metadata.partition_columns)
        said = metadata.configuration.get(PARTITION_BY)
        partition = PartitionBy.parse(said) if said else None
        if columns != ([partition.column] if partition else []):
            raise InvalidStateError(
                f"Delta table {self.uri} is partitioned by {', '.join(columns)}, which kinesis-batch does not "
                "write (it writes the layouts of --partition-by); choose another table"
            )
        return partition

    def _schema(self, table: Any) -> pa.Schema:
        return pa.schema(table.schema().to_arrow())

    def _evolve(self, table: Any, target: pa.Schema) -> bool:
        """New columns (and new fields of struct columns) in a commit of their own: deltalake
        cannot change the schema in an append of files. Harmless if the batch is then
        discarded: nullable columns with no rows yet. Delta widens no column (``widens``)."""
        from deltalake import CommitProperties, Schema
        from deltalake.exceptions import CommitFailedError

        fields = additions(self._schema(table), target)
        if not fields:
            return False
        delta_fields = list(Schema.from_arrow(pa.schema(fields)).fields)
        properties = CommitProperties(custom_metadata={"kinesis_batch.app": self.app, "kinesis_batch.action": "evolve"})
        try:
            table.alter.add_columns(delta_fields, commit_properties=properties)
        except CommitFailedError:
            return True  # another commit got there first: reload and look again
        except Exception as exc:
            what = f"cannot add columns to the Delta table at {self.uri}"
            raise from_storage(exc, what, remote=self.root.on_s3) from exc
        return True

    def _load(self, *, missing_ok: bool = False) -> Any:
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.uri, storage_options=self._options)
        except TableNotFoundError as exc:
            if missing_ok:
                return None
            raise InvalidStateError(f"no Delta table at {self.uri} (a run creates it)") from exc
        except Exception as exc:
            raise from_storage(exc, f"cannot open the Delta table at {self.uri}", remote=self.root.on_s3) from exc

    def _commit(
        self, table: Any, batch_id: str, files: list[Any], record: CommitRecord | None, target: pa.Schema | None = None
    ) -> bool:
        """One commit with the batch's marker (:meth:`_properties`) through ``table``; False if a
        concurrent commit of ours got there first (reload and decide again)."""
        from deltalake.exceptions import CommitFailedError

        properties = self._properties(table, batch_id, record)
        try:
            table.create_write_transaction(files, mode="append", schema=table.schema(), commit_properties=properties)
        except CommitFailedError:
            return False
        except Exception as exc:
            raise from_storage(exc, f"cannot commit to the Delta table at {self.uri}", remote=self.root.on_s3) from exc
        return True

    def _properties(self, table: Any, batch_id: str, record: CommitRecord | None) -> Any:
        """A commit's marker: the batch's app transaction (published with ``record``, else discarded)
        and the consumer's, moved to its next batch number (one counter for Spark-style readers)."""
        from deltalake import CommitProperties, Transaction

        action, version = (PUBLISH, PUBLISHED) if record else (DISCARD, DISCARDED)
        number = (table.transaction_version(self.consumer_app_id) or 0) + 1
        return CommitProperties(
            custom_metadata={**marker(self.app, self.stream, batch_id, action, record), BATCH_NUMBER: str(number)},
            app_transactions=[
                Transaction(app_id=self.app_id(batch_id), version=version),
                Transaction(app_id=self.consumer_app_id, version=number),
            ],
        )

    def _files(self, record: CommitRecord, files: Sequence[StagedFile]) -> list[Any]:
        """One add action per file, with its size, row count and column statistics."""
        from deltalake.transaction import AddAction

        sizes, partition = self._staged(record.batch_id, files), self.partitioning()
        now = int(time.time() * 1000)
        return [
            AddAction(
                path=f"data/{record.batch_id}/{file.name}",  # relative to the root: absolute paths break readers
                size=sizes[file.name],
                partition_values={partition.column: file.partition} if partition else {},
                modification_time=now,
                data_change=True,
                stats=delta_stats(file.rows, file.stats),
            )
            for file in sorted(files, key=lambda f: f.name)
        ]

    def _state(self, table: Any, batch_id: str) -> str | None:
        return {PUBLISHED: PUBLISH, DISCARDED: DISCARD}.get(table.transaction_version(self.app_id(batch_id)))

    def _lookup(self, batch_id: str) -> CommitRecord | None:
        """From the app transaction (kept in the log's checkpoints for good) and the commit's
        metadata, or the marker archive once log clean-up removed the commit."""

        def in_the_log(table: Any) -> tuple[bool, CommitRecord | None]:
            if self._state(table, batch_id) != PUBLISH:
                return False, None
            for commit in _history(table):
                if commit.get("kinesis_batch.batch_id") == batch_id and commit.get("kinesis_batch.action") == PUBLISH:
                    return True, CommitRecord.from_json(commit["kinesis_batch.commit_record"])
            return True, None

        published, record = self._reading(in_the_log)
        if not published or record is not None:
            return record
        archived = self._archived_record(batch_id)
        if archived is not None:
            return archived
        raise InvalidStateError(
            f"batch {batch_id} is in the Delta table {self.uri} but its commit is no longer in the log "
            "and was not archived (a log clean-up other than kinesis-batch maintain's): its checkpoints "
            "cannot be rolled forward automatically"
        )

    def last_batch(self) -> CommitRecord | None:
        def newest(table: Any) -> CommitRecord | None:
            for commit in _history(table):
                if commit.get("kinesis_batch.app") == self.app and commit.get("kinesis_batch.action") == PUBLISH:
                    return CommitRecord.from_json(commit["kinesis_batch.commit_record"])
            return None

        return self._reading(newest) or self._archived_latest()

    def bookkeeping(self) -> Place:
        return self.root.child("_kinesis_batch")

    def check_place(self) -> None:
        if self.root.on_s3:  # else deltalake's "Generic S3 error", as if it might pass
            check_bucket(self.root)
        check_place_of(self.format, self.root, f"--output {self.uri}")

    def exists(self) -> bool:
        return self._load(missing_ok=True) is not None

    def _marked(self, table: Any) -> bool:  # a run made it, or published into it
        made = PARTITION_BY in table.metadata().configuration
        return made or any(commit.get("kinesis_batch.action") in (PUBLISH, DISCARD) for commit in _history(table))

    def data_files(self) -> list[DataFile]:
        table = pa.table(self._reading(lambda loaded: loaded.get_add_actions(flatten=True)))
        partition = self.partitioning()
        column = f"partition.{partition.column}" if partition else None
        values = table.column(column).cast(pa.string()).to_pylist() if column else [None] * table.num_rows
        return [  # the log's paths are URIs: decoded, they are the files' own paths under the root
            DataFile(unquote(path), int(size), int(rows or 0), value)
            for path, size, rows, value in zip(
                table.column("path").to_pylist(),
                table.column("size_bytes").to_pylist(),
                table.column("num_records").to_pylist(),
                values,
                strict=True,
            )
        ]


def _history(table: Any) -> Iterator[dict[str, Any]]:
    """The table's commits, newest first, read a growing page at a time (a look-up usually
    finds its batch among the last few commits, and the log can be long)."""
    limit, seen = 16, 0
    while True:
        page = table.history(limit)
        yield from page[seen:]
        if len(page) < limit:
            return
        seen, limit = len(page), limit * 4


def open_table(
    where: str, *, catalog: str | None, app: str, stream: str, s3: S3Settings, merge: Merge | None
) -> DeltaSink:
    """The format's sink (kinesis_batch.output.formats): the Delta table at ``where``."""
    return DeltaSink(where, app=app, stream=stream, s3=s3, merge=merge)


__all__ = ["TABLE_PROPERTIES", "DeltaSink", "open_table"]
