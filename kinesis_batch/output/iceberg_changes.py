"""The merge's parts for an Iceberg table of current state: a batch's changes applied in one transaction, the rows of
the changed keys deleted (copy-on-write) and the new versions appended, both snapshots carrying
the batch's marker; the catalog's compare-and-swap makes the transaction fail when the table
moved since it was loaded (kinesis_batch.output.iceberg), and it is decided again
(kinesis_batch.output.changes). pyiceberg reads the files' column statistics into the
manifests, so a scan (ours for the keys, any engine's) skips files by key range.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from kinesis_batch.changes.apply import Decision
from kinesis_batch.changes.fold import among, kept_among, keys_of
from kinesis_batch.columns import CHANGE_OP
from kinesis_batch.output.catalogs import catalog_errors
from kinesis_batch.output.changes import KEY_PROPERTY, LISTED, ORDER_COLUMNS
from kinesis_batch.output.tables import PUBLISH, marker
from kinesis_batch.storage.records import CommitRecord


class IcebergAccess(Protocol):
    """What the merge uses of the Iceberg table sink it is composed with
    (kinesis_batch.output.iceberg.IcebergSink): its catalog's table, and its marked commit."""

    catalog: Any
    identifier: str
    app: str
    stream: str

    def _load(self) -> Any: ...

    def _schema(self, table: Any) -> pa.Schema: ...

    def _commit(
        self, table: Any, batch_id: str, files: list[Any], record: CommitRecord | None, target: pa.Schema | None = None
    ) -> bool: ...


class IcebergMerge:
    """The merge's parts (kinesis_batch.output.changes.MergeParts) for the Iceberg table of ``sink``."""

    def __init__(self, sink: IcebergAccess) -> None:
        self.sink = sink

    def existing(self) -> Any:
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        try:
            return self.sink.catalog.load_table(self.sink.identifier)
        except (NoSuchTableError, NoSuchNamespaceError):
            return None

    def key_property(self, table: Any) -> str | None:
        said = table.properties.get(KEY_PROPERTY)
        return str(said) if said else None

    def set_key_property(self, key: Sequence[str]) -> None:
        from pyiceberg.exceptions import CommitFailedException

        try:
            with catalog_errors(f"Iceberg table {self.sink.identifier}"), self.sink._load().transaction() as tx:
                tx.set_properties(**{KEY_PROPERTY: ",".join(key)})
        except CommitFailedException:
            pass  # another run set it meanwhile: the next prepare reads it

    def rows_of(self, table: Any, key: Sequence[str], keys: pa.Table) -> pa.Table:
        """By the key's first column, which pyiceberg skips files by: up to LISTED values by an
        IN, more by their range (pyiceberg binds an IN's every value again for each manifest:
        seconds for tens of thousands), the scan kept to the batch's keys as it comes (kept_among)."""
        values = keys.column(key[0]).combine_chunks().unique()
        row_filter = _matching(keys, key[:1]) if len(values) <= LISTED else _within(values, key[0])
        with catalog_errors(f"Iceberg table {self.sink.identifier}"):
            reader = table.scan(row_filter=row_filter, selected_fields=(*key, *ORDER_COLUMNS)).to_arrow_batch_reader()
            wanted = values.cast(reader.schema.field(key[0]).type)
            rows = kept_among(reader, reader.schema, key[0], wanted)
        return rows if len(key) == 1 else among(rows, keys, key)

    def merge(
        self, table: Any, decision: Decision, key: Sequence[str], record: CommitRecord, target: pa.Schema | None
    ) -> bool:
        from pyiceberg.exceptions import CommitFailedException

        changed = pa.concat_tables([decision.upserts, decision.deletes], promote_options="permissive")
        if changed.num_rows == 0:
            return self.sink._commit(table, record.batch_id, [], record)
        properties = marker(self.sink.app, self.sink.stream, record.batch_id, PUBLISH, record)
        # The rows of the changed keys go by the key's first column (one IN, which pyiceberg
        # evaluates fast; an OR of a term per key took seconds per thousand keys); with a longer
        # key, the other rows that catches are appended again unchanged, in the same snapshot.
        doomed = _matching(changed, key[:1])
        with catalog_errors(f"Iceberg table {self.sink.identifier}"):
            known = key[0] in self.sink._schema(table).names  # a new table gets the key with its first batch
            caught = table.scan(row_filter=doomed).to_arrow() if len(key) > 1 and known else None
        kept = [decision.upserts] + ([among(caught, changed, key, inside=False)] if caught is not None else [])
        try:
            with catalog_errors(f"Iceberg table {self.sink.identifier}"), table.transaction() as tx:
                if target is not None:
                    with tx.update_schema() as update:
                        update.union_by_name(target)
                with warnings.catch_warnings():  # new keys match no row: pyiceberg warns, and that is fine
                    warnings.simplefilter("ignore", UserWarning)
                    tx.delete(delete_filter=doomed, snapshot_properties=properties)
                schema = tx.table_metadata.schema().as_arrow()
                parts = [_fitted(part, schema) for part in kept if part.num_rows]
                if parts:  # none: the batch only deleted
                    tx.append(pa.concat_tables(parts), snapshot_properties=properties)
        except CommitFailedException:
            return False
        return True


def _matching(keys: pa.Table, key: Sequence[str]) -> Any:
    """A row filter for the rows whose ``key`` (one column) is among ``keys``'."""
    from pyiceberg import expressions

    (name,) = key
    found: Any = expressions  # its pydantic classes take positional arguments, which mypy does not see
    values = sorted({value for (value,) in keys_of(keys, key)}, key=repr)
    return found.In(name, values) if values else found.AlwaysFalse()


def _within(values: pa.Array, name: str) -> Any:
    """A row filter for the range of ``values`` (every row when their type has no literal)."""
    from pyiceberg import expressions

    found: Any = expressions
    low, high = (bound.as_py() for bound in pc.min_max(values).values())
    if not isinstance(low, int | str) or isinstance(low, bool):
        return found.AlwaysTrue()
    return found.And(found.GreaterThanOrEqual(name, low), found.LessThanOrEqual(name, high))


def _fitted(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """The rows in the table's columns and types, without the operation."""
    rows = rows.drop_columns([CHANGE_OP.name]) if CHANGE_OP.name in rows.schema.names else rows
    columns = [
        rows.column(field.name).cast(field.type)
        if field.name in rows.schema.names
        else pa.nulls(rows.num_rows, field.type)
        for field in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


__all__ = ["IcebergMerge"]
