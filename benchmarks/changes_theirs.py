"""The users' own path that benchmarks.changes measures beside kinesis-batch's: land the change
records raw (an append of their bytes), then a second job reads the batch back, decodes it,
keeps each key's newest change and merges it with deltalake's MERGE, or pyiceberg's delete and
append, into a table of its own (made by its first merge). benchmarks.changes_job is that job
as a process of its own, over what ``kinesis-batch run`` landed.

Light imports on purpose: the job's start-up is part of what benchmarks.changes_runs measures."""

from __future__ import annotations

import io
import time
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from kinesis_batch.aws import s3_settings

if TYPE_CHECKING:
    from kinesis_batch.shards.model import Record

FIELDS = ["id", "version", "name", "amount", "deleted"]


class Theirs:
    """The users' path: land the records raw, then a job that folds them and merges."""

    def __init__(self, args: tuple[str, ...]) -> None:
        options = dict(zip(args[::2], args[1::2], strict=True))
        self.format, self.target = options["--format"], options["--output"]
        self.s3 = s3_settings()
        if self.format == "iceberg":
            from kinesis_batch.output.catalogs import load_catalog

            self.catalog = load_catalog(options.get("--catalog"), self.s3)
        self.batches = 0

    def load(self, rows: pa.Table) -> None:
        """The table made with ``rows``, and (Iceberg) the raw landing table beside it."""
        self._create(rows)
        if self.format == "iceberg":
            self.catalog.create_table(self.target + "_landing", schema=LANDING)

    def timed_apply(self, records: list[Record]) -> float:
        started = time.monotonic()
        self.batches += 1
        raw = pa.table(
            {
                "shard_id": [r.shard_id for r in records],
                "sequence_number": [r.sequence_number for r in records],
                "data": [r.data for r in records],
                "batch": pa.array([self.batches] * len(records), pa.int64()),
            },
            schema=LANDING,
        )
        self._land(raw)
        self._merge(_newest(parsed(self._landed(self.batches))))  # load() made the table
        return time.monotonic() - started

    def merge(self, changes: pa.Table) -> None:
        """Each key's newest change of ``changes`` merged in; the table made if it is not there."""
        newest = _newest(changes)
        if self._exists():
            self._merge(newest)
            return
        self._create(newest.filter(pc.invert(newest.column("deleted"))).select(FIELDS))

    def _create(self, rows: pa.Table) -> None:
        if self.format == "delta":
            from deltalake import write_deltalake

            write_deltalake(self.target, rows, storage_options=self.storage_options())
            return
        self.catalog.create_namespace_if_not_exists(self.target.split(".")[0])
        self.catalog.create_table(self.target, schema=rows.schema).append(rows)

    def current_versions(self) -> dict[int, int]:
        if self.format == "delta":
            from deltalake import DeltaTable

            delta = DeltaTable(self.target, storage_options=self.storage_options())
            table = delta.to_pyarrow_table(columns=["id", "version"])
        else:
            table = self.catalog.load_table(self.target).scan(selected_fields=("id", "version")).to_arrow()
        return versions(table)

    def _exists(self) -> bool:
        if self.format == "delta":
            from deltalake import DeltaTable

            return bool(DeltaTable.is_deltatable(self.target, storage_options=self.storage_options()))
        return bool(self.catalog.table_exists(self.target))

    def storage_options(self) -> dict[str, str] | None:
        return self.s3.object_store_options() if self.target.startswith("s3://") else None

    def _land(self, raw: pa.Table) -> None:
        if self.format == "delta":
            from deltalake import write_deltalake

            write_deltalake(self.target + "_landing", raw, mode="append", storage_options=self.storage_options())
        else:
            self.catalog.load_table(self.target + "_landing").append(raw)

    def _landed(self, batch: int) -> pa.Table:
        if self.format == "delta":
            from deltalake import DeltaTable

            landing = DeltaTable(self.target + "_landing", storage_options=self.storage_options())
            return landing.to_pyarrow_table(columns=["data"], filters=[("batch", "=", batch)])
        return self.catalog.load_table(self.target + "_landing").scan(row_filter=f"batch == {batch}").to_arrow()

    def _merge(self, newest: pa.Table) -> None:
        upserts = newest.filter(pc.invert(newest.column("deleted")))
        if self.format == "delta":
            from deltalake import DeltaTable

            table = DeltaTable(self.target, storage_options=self.storage_options())
            source = newest.select(FIELDS).cast(pa.schema(table.schema().to_arrow()))  # type: ignore[arg-type]
            (
                table.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all(predicate="s.deleted = false AND s.version > t.version")
                .when_matched_delete(predicate="s.deleted = true AND s.version > t.version")
                .when_not_matched_insert_all(predicate="s.deleted = false")
                .execute()
            )
            return
        from pyiceberg.expressions import In

        table = self.catalog.load_table(self.target)
        with table.transaction() as transaction:
            transaction.delete(In("id", newest.column("id").to_pylist()))
            transaction.append(upserts.select(FIELDS).cast(table.schema().as_arrow()))


LANDING = pa.schema(
    [("shard_id", pa.string()), ("sequence_number", pa.string()), ("data", pa.binary()), ("batch", pa.int64())]
)


def parsed(landed: pa.Table) -> pa.Table:
    """The change records of a landing's ``data`` column, parsed by pyarrow's JSON reader."""
    return pa_json.read_json(io.BytesIO(b"\n".join(landed.column("data").to_pylist())))


def versions(table: pa.Table) -> dict[int, int]:
    return dict(zip(table.column("id").to_pylist(), table.column("version").to_pylist(), strict=True))


def _newest(changes: pa.Table) -> pa.Table:
    """Each id's change of the greatest version."""
    ordered = changes.sort_by([("id", "ascending"), ("version", "descending")])
    ids = ordered.column("id").combine_chunks()
    first = pc.not_equal(ids.slice(1), ids.slice(0, len(ids) - 1)) if len(ids) > 1 else pa.array([], pa.bool_())
    keep = pa.concat_arrays([pa.array([True]), first]) if len(ids) else pa.array([], pa.bool_())
    kept = ordered.filter(keep)
    if "name" not in kept.schema.names:  # a batch of deletes only
        kept = kept.append_column("name", pa.nulls(kept.num_rows, pa.string()))
    if "amount" not in kept.schema.names:
        kept = kept.append_column("amount", pa.nulls(kept.num_rows, pa.float64()))
    return kept


__all__ = ["FIELDS", "Theirs", "parsed", "versions"]
