"""The merge's parts for a Delta table of current state: a batch's changes merged with deltalake's MERGE, whose
commit carries the batch's app transactions and metadata like any commit of ours
(kinesis_batch.output.delta), so the merge and the marker are one commit, and a merge racing
another commit of this consumer (or a compaction of the files it rewrites) fails and is
decided again on the reloaded table (kinesis_batch.output.changes).

The merge finds the rows of the batch's keys by the key, and on a one-column key also by the
batch's key range, so that deltalake skips the files whose statistics (written by every merge)
lie outside it: its cost follows the batch, not the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from kinesis_batch.changes.apply import Decision
from kinesis_batch.changes.fold import among, kept_among
from kinesis_batch.columns import CHANGE_OP
from kinesis_batch.errors import from_storage
from kinesis_batch.output.changes import KEY_PROPERTY, LISTED, ORDER_COLUMNS
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord


class DeltaAccess(Protocol):
    """What the merge uses of the Delta table sink it is composed with
    (kinesis_batch.output.delta.DeltaSink): the table, loaded, and its marked commit."""

    uri: str
    root: Place

    def _load(self, *, missing_ok: bool = False) -> Any: ...

    def _commit(
        self, table: Any, batch_id: str, files: list[Any], record: CommitRecord | None, target: pa.Schema | None = None
    ) -> bool: ...

    def _properties(self, table: Any, batch_id: str, record: CommitRecord | None) -> Any: ...


class DeltaMerge:
    """The merge's parts (kinesis_batch.output.changes.MergeParts) for the Delta table of ``sink``."""

    def __init__(self, sink: DeltaAccess) -> None:
        self.sink = sink

    def existing(self) -> Any:
        return self.sink._load(missing_ok=True)

    def key_property(self, table: Any) -> str | None:
        said = table.metadata().configuration.get(KEY_PROPERTY)
        return str(said) if said else None

    def set_key_property(self, key: Sequence[str]) -> None:
        from deltalake.exceptions import CommitFailedError

        try:
            self.sink._load().alter.set_table_properties({KEY_PROPERTY: ",".join(key)}, raise_if_not_exists=False)
        except CommitFailedError:
            pass  # another run set it meanwhile: the next prepare reads it
        except Exception as exc:
            what = f"cannot set the key of the Delta table {self.sink.uri}"
            raise from_storage(exc, what, remote=self.sink.root.on_s3) from exc

    def rows_of(self, table: Any, key: Sequence[str], keys: pa.Table) -> pa.Table:
        """Through deltalake's SQL, which skips files by their statistics (pyarrow's dataset
        cannot filter the string_view statistics deltalake writes): up to LISTED keys by an IN
        list, more by the batch's key range (DataFusion overflows its stack on IN lists of some
        30,000 values), the scan kept to the batch's keys as it comes (kept_among). Keys without
        exact literals (binary, times) are matched after reading every row's key."""
        from deltalake import QueryBuilder

        values = keys.column(key[0]).combine_chunks().unique()
        if len(values) > LISTED:  # the range's two literals only (none for a type without: every row)
            where = " AND ".join(_key_range(keys, key[0], alias="")) or "TRUE"
        else:
            literals = [_literal(value) for value in values.to_pylist()]
            if not literals:
                where = "FALSE"
            elif not all(literals):
                where = "TRUE"
            else:
                where = f"`{key[0]}` IN ({', '.join(str(v) for v in literals)})"
        columns = ", ".join(f"`{name}`" for name in (*key, *ORDER_COLUMNS))
        reader = pa.RecordBatchReader.from_stream(
            QueryBuilder().register("t", table).execute(f"SELECT {columns} FROM t WHERE {where}")
        )
        schema = pa.schema([pa.field(f.name, _plain(f.type)) for f in reader.schema])
        wanted = values.cast(schema.field(0).type)
        rows = kept_among(map(_cast(schema), reader), schema, key[0], wanted)
        return rows if len(key) == 1 else among(rows, keys, key)

    def merge(
        self, table: Any, decision: Decision, key: Sequence[str], record: CommitRecord, target: pa.Schema | None
    ) -> bool:
        from deltalake.exceptions import CommitFailedError

        source = pa.concat_tables([decision.upserts, decision.deletes], promote_options="permissive")
        if source.num_rows == 0:  # nothing newer than the table: the marker alone
            return self.sink._commit(table, record.batch_id, [], record)
        source = _fitted(source, pa.schema(table.schema().to_arrow()))
        properties = self.sink._properties(table, record.batch_id, record)
        matched = " AND ".join(f"t.`{name}` = s.`{name}`" for name in key)
        ranges = _key_range(source, key[0]) if len(key) == 1 else []
        predicate = " AND ".join([matched, *ranges])
        upsert = f"s.`{CHANGE_OP.name}` = 'upsert'"
        try:
            (
                table.merge(source, predicate, source_alias="s", target_alias="t", commit_properties=properties)
                .when_matched_update_all(predicate=upsert, except_cols=[CHANGE_OP.name])
                .when_matched_delete(predicate=f"NOT ({upsert})")
                .when_not_matched_insert_all(predicate=upsert, except_cols=[CHANGE_OP.name])
                .execute()
            )
        except CommitFailedError:
            return False
        except Exception as exc:
            what = f"cannot merge into the Delta table at {self.sink.uri}"
            raise from_storage(exc, what, remote=self.sink.root.on_s3) from exc
        return True


def _plain(kind: pa.DataType) -> pa.DataType:
    """DataFusion's view types as the plain ones the batch has."""
    if kind == pa.string_view():
        return pa.string()
    if kind == pa.binary_view():
        return pa.binary()
    if pa.types.is_list_view(kind) or pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(_plain(kind.value_type))
    return kind


def _cast(schema: pa.Schema) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    return lambda page: page.cast(schema)


def _fitted(source: pa.Table, schema: pa.Schema) -> pa.Table:
    """The changes with the table's columns, in its types (a column the batch lacks: nulls)."""
    have = source.schema.names
    columns = [
        source.column(field.name).cast(field.type) if field.name in have else pa.nulls(source.num_rows, field.type)
        for field in schema
    ]
    columns.append(source.column(CHANGE_OP.name))
    return pa.Table.from_arrays(columns, schema=schema.append(pa.field(CHANGE_OP.name, pa.string())))


def _key_range(source: pa.Table, name: str, alias: str = "t.") -> list[str]:
    """``key >= min`` and ``key <= max`` of the batch's keys, as SQL, when their type has
    literals that say it exactly (numbers, text, dates); else nothing."""
    low, high = pc.min_max(source.column(name)).values()
    low, high = low.as_py(), high.as_py()
    if low is None:
        return []
    literal = _literal(low), _literal(high)
    if None in literal:
        return []
    return [f"{alias}`{name}` >= {literal[0]}", f"{alias}`{name}` <= {literal[1]}"]


def _literal(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime):
        return None  # DataFusion's timestamp literals lose the zone: no pruning rather than a wrong one
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    return None


__all__ = ["DeltaMerge"]
