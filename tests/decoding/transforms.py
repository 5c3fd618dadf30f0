"""Transforms the tests name with --transform (deterministic, as the contract asks)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def rename_and_derive(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Rename ``id`` to ``order_id`` and derive ``big`` = qty > 10."""
    batch = batch.rename_columns(["order_id" if name == "id" else name for name in batch.schema.names])
    return batch.append_column("big", pc.greater(batch.column("qty"), 10))


def drop_odd(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Keep the rows whose ``id`` is even (the others are filtered out, not lost)."""
    return batch.filter(pc.equal(pc.bit_wise_and(batch.column("id"), 1), 0))


def fail_on_seven(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Fail on any page holding ``id`` 7."""
    if 7 in batch.column("id").to_pylist():
        raise ValueError("seven is not allowed")
    return batch


def lose_the_key(batch: pa.RecordBatch) -> pa.RecordBatch:
    return batch.drop_columns(["sequence_number"])


def explode_items(batch: pa.RecordBatch) -> pa.RecordBatch:
    """One row per element of ``items`` (a list of structs), with its fields and the record's
    Kinesis columns: a record becomes several rows."""
    items = batch.column("items")
    parents = pc.list_parent_indices(items)
    flat = pc.list_flatten(items)
    kept = batch.drop_columns(["items"]).take(parents)
    return pa.RecordBatch.from_arrays(
        [*kept.columns, *flat.flatten()], names=[*kept.schema.names, *[f.name for f in flat.type]]
    )
