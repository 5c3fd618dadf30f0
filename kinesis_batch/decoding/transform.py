"""Stage 3: a user's last mile, ``--transform module:function`` (or a built-in by name).

The function takes one ``pyarrow.RecordBatch`` of decoded rows and returns another (a Table is
accepted too). Its input has the Kinesis columns (``shard_id``, ``sequence_number``,
``sub_sequence_number``, ``partition_key``, ``approximate_arrival_timestamp``,
``lineage_depth``) beside the decoded fields. It may rename, filter, derive, flatten, and make
several rows of one (``record_index`` numbers them afterwards). Its output must keep
``sequence_number`` and ``sub_sequence_number`` as they were: they say which record a row came
from, and the other Kinesis columns are set again from the record. It must be deterministic (a
retried task must make the same rows) and run wherever the Spark tasks run (an installed
module, or a file Spark ships).

A page the function fails on is run again record by record: the records it fails on become dead
letters (stage ``transform``), the others go on. A record it makes no row of is counted as
filtered out, not lost.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kinesis_batch.decoding.builtins import BUILTINS
from kinesis_batch.decoding.rejects import TRANSFORM, Rejected
from kinesis_batch.errors import IllegalArgumentError

Function = Callable[[pa.RecordBatch], Any]
KEY = ("sequence_number", "sub_sequence_number")


def load(spec: str) -> Function:
    """The function ``spec`` names; IllegalArgumentError in one line when it cannot be had."""
    if spec in BUILTINS:
        return BUILTINS[spec]
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise IllegalArgumentError(
            f"--transform {spec}: give module:function, or a built-in ({', '.join(sorted(BUILTINS))})"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or the module's own error while importing
        raise IllegalArgumentError(f"--transform {spec}: cannot import {module_name}: {exc}") from exc
    function = getattr(module, name, None)
    if not callable(function):
        raise IllegalArgumentError(f"--transform {spec}: {module_name} has no function {name}")
    return function  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Transformed:
    """The rows the function made and, for each, the position of its record in the page."""

    rows: pa.RecordBatch
    positions: list[int]
    rejects: list[Rejected]


def apply(function: Function, batch: pa.RecordBatch, positions: Sequence[int]) -> Transformed:
    """``function`` over the page; again record by record if it fails on the page."""
    keys = _keys(batch, positions)
    try:
        return _call(function, batch, keys)
    except Exception:  # the function's own error: find the records it fails on
        return _one_by_one(function, batch, positions, keys)


def _one_by_one(
    function: Function, batch: pa.RecordBatch, positions: Sequence[int], keys: dict[tuple[str, int], int]
) -> Transformed:
    parts: list[pa.RecordBatch] = []
    made: list[int] = []
    rejects: list[Rejected] = []
    for position in sorted(set(positions)):
        rows = [index for index, at in enumerate(positions) if at == position]
        one = batch.take(pa.array(rows, type=pa.int64()))
        try:
            done = _call(function, one, {key: at for key, at in keys.items() if at == position})
        except Exception as exc:
            rejects.append(Rejected(position, TRANSFORM, "transform failed", f"{type(exc).__name__}: {exc}"[:200]))
            continue
        parts.append(done.rows)
        made.extend(done.positions)
    schemas = {part.schema for part in parts if part.num_rows}
    if len(schemas) > 1:  # records whose rows differ in type: unify as the conform stage will
        table = pa.concat_tables([pa.Table.from_batches([part]) for part in parts], promote_options="permissive")
        rows = table.combine_chunks().to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([])
    else:
        nonempty = [part for part in parts if part.num_rows]
        rows = pa.concat_batches(nonempty) if nonempty else batch.slice(0, 0)
    return Transformed(rows, made, rejects)


def _call(function: Function, batch: pa.RecordBatch, keys: dict[tuple[str, int], int]) -> Transformed:
    out = function(batch)
    if isinstance(out, pa.Table):
        out = (
            out.combine_chunks().to_batches()[0] if out.num_rows else pa.RecordBatch.from_pylist([], schema=out.schema)
        )
    if not isinstance(out, pa.RecordBatch):
        raise TypeError(f"the transform returned a {type(out).__name__}, not a pyarrow RecordBatch")
    missing = [name for name in KEY if name not in out.schema.names]
    if missing:
        raise TypeError(f"the transform's rows lack {', '.join(missing)}: keep them, they name each row's record")
    made = []
    for key in zip(
        out.column("sequence_number").to_pylist(), out.column("sub_sequence_number").to_pylist(), strict=True
    ):
        if key not in keys:
            raise TypeError(f"the transform made a row of no record of its input (sequence number {key[0]})")
        made.append(keys[key])
    return Transformed(out, made, [])


def _keys(batch: pa.RecordBatch, positions: Sequence[int]) -> dict[tuple[str, int], int]:
    sequences = batch.column("sequence_number").to_pylist()
    subs = batch.column("sub_sequence_number").to_pylist()
    return {(sequence, sub): position for sequence, sub, position in zip(sequences, subs, positions, strict=True)}


__all__ = ["KEY", "Function", "Transformed", "apply", "load"]
