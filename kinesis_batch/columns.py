"""The columns of every output, one contract for all formats.

- **Raw rows** (``--decode raw``): the record's metadata and its bytes in ``data``.
- **Decoded rows**: the same metadata under the same names, without ``data``, plus
  ``record_index`` (a record may make several rows), beside the decoded fields. The unique key
  is (``shard_id``, ``sequence_number``, ``sub_sequence_number``, ``record_index``).
- **Dead letters**: the raw row of a record that could not be decoded, with the ``stage`` that
  failed and a one-line ``reason``.

The table formats add ``batch_id`` as a plain column; the parquet format has it from its
``batch_id=...`` folder names. Every column is nullable, as Arrow's schema is (a required
Iceberg column would refuse the tasks' files). Sequence numbers stay strings: up to 129
digits, past any decimal type.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.shards.chunk import Chunk
from kinesis_batch.shards.model import Record

SHARD_ID = pa.field("shard_id", pa.string())
SEQUENCE_NUMBER = pa.field("sequence_number", pa.string())
SUB_SEQUENCE_NUMBER = pa.field("sub_sequence_number", pa.int64())
RECORD_INDEX = pa.field("record_index", pa.int32())
PARTITION_KEY = pa.field("partition_key", pa.string())
DATA = pa.field("data", pa.binary())
ARRIVAL = pa.field("approximate_arrival_timestamp", pa.timestamp("us", tz="UTC"))
LINEAGE_DEPTH = pa.field("lineage_depth", pa.int32())
BATCH_ID = pa.field("batch_id", pa.string())
STAGE = pa.field("stage", pa.string())
REASON = pa.field("reason", pa.string())
#: A change's place in its source's order (kinesis_batch.changes.model), kept in a table of
#: current state; and its operation, in a batch's staged files only.
CHANGE_POSITION = pa.field("change_position", pa.list_(pa.int64()))
CHANGE_OP = pa.field("change_op", pa.string())

#: The rows of ``--decode raw``, as the Spark tasks write them.
ROW_SCHEMA = pa.schema([SHARD_ID, SEQUENCE_NUMBER, SUB_SEQUENCE_NUMBER, PARTITION_KEY, DATA, ARRIVAL, LINEAGE_DEPTH])
#: What a decoded row carries beside its fields.
METADATA = pa.schema(
    [SHARD_ID, SEQUENCE_NUMBER, SUB_SEQUENCE_NUMBER, RECORD_INDEX, PARTITION_KEY, ARRIVAL, LINEAGE_DEPTH]
)
#: A record that did not become rows: its raw row, where it failed and why.
DEAD_LETTER_SCHEMA = ROW_SCHEMA.append(STAGE).append(REASON)
#: No decoded field may have one of these names (nor ``data``, which only raw rows have).
RESERVED = frozenset([*METADATA.names, BATCH_ID.name, DATA.name, CHANGE_POSITION.name, CHANGE_OP.name])
#: The Kinesis columns a transform's input carries: a decoded row's, but ``record_index`` (set
#: after the transform, which may make several rows of a record).
TRANSFORM_INPUT = tuple(name for name in METADATA.names if name != RECORD_INDEX.name)


def dictionary_encoded(schema: pa.Schema) -> list[str]:
    """The columns of ``schema`` a Parquet writer encodes as dictionaries: those with few
    distinct values a file (shards, partition keys); the rest are mostly unique."""
    return [name for name in (SHARD_ID.name, PARTITION_KEY.name) if name in schema.names]


@dataclass(frozen=True)
class Columns:
    """What a table is made for: ``fixed`` columns (raw rows, dead letters), or decoded rows:
    the metadata, then ``fields`` (those declared or already known; more may be added)."""

    fixed: pa.Schema | None = None
    fields: pa.Schema | None = None
    changes: bool = False  # a table of current state: each row keeps its change's position

    @property
    def decoded(self) -> bool:
        return self.fixed is None

    def schema(self, *, batch_column: bool) -> pa.Schema:
        """The columns a new table (or a task's file) starts with."""
        base = self.fixed if self.fixed is not None else _concat(METADATA, self.fields)
        base = base.append(BATCH_ID) if batch_column else base
        return base.append(CHANGE_POSITION) if self.changes else base


RAW = Columns(fixed=ROW_SCHEMA)
DEAD_LETTERS = Columns(fixed=DEAD_LETTER_SCHEMA)


def decoded(fields: pa.Schema | None = None) -> Columns:
    """Decoded rows with ``fields`` declared (None: inferred from the records)."""
    if fields is not None:
        check_reserved(fields.names)
    return Columns(fields=fields)


def fields_of(schema: pa.Schema) -> pa.Schema:
    """The decoded fields of a decoded table's (or file's) schema: all but the metadata."""
    return pa.schema([field for field in schema if field.name not in RESERVED])


def check_reserved(names: list[str], where: str = "the schema") -> None:
    """A decoded field may not take a metadata column's name: one line naming them."""
    taken = sorted(set(names) & RESERVED)
    if taken:
        raise IllegalArgumentError(
            f"{where} has field(s) {', '.join(taken)}, the name(s) of kinesis-batch's own columns "
            f"({', '.join(sorted(RESERVED))}): rename them in the schema and its producers"
        )


def schema_to_text(schema: pa.Schema) -> str:
    """An Arrow schema as text (base64 of its IPC form): every type exactly, nested ones too;
    how a file's schema travels in a batch's results and a table's in a task's spec."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def schema_from_text(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def _concat(first: pa.Schema, second: pa.Schema | None) -> pa.Schema:
    return pa.schema([*first, *(second or [])])


def record_columns(records: Sequence[Record], depth: int, *, data: bool) -> dict[str, list[Any]]:
    """The Kinesis columns of ``records`` as lists, in ROW_SCHEMA's order (without ``data``
    unless asked): what raw rows, decoded rows and dead letters all begin with."""
    body: dict[str, list[Any]] = {
        "shard_id": [record.shard_id for record in records],
        "sequence_number": [record.sequence_number for record in records],
        "sub_sequence_number": [record.sub_sequence_number for record in records],
        "partition_key": [record.partition_key for record in records],
    }
    if data:
        body["data"] = [record.data for record in records]
    body["approximate_arrival_timestamp"] = [record.approximate_arrival_timestamp for record in records]
    body["lineage_depth"] = [depth] * len(records)
    return body


def chunk_columns(chunk: Chunk, depth: int) -> list[pa.Array]:
    """ROW_SCHEMA's columns of a chunk's records, each built at once from the chunk's columns:
    what :func:`record_columns` gives, with no object per record."""
    n = len(chunk)
    return [
        pa.repeat(pa.scalar(chunk.shard_id, SHARD_ID.type), n),
        pa.array(chunk.sequence_numbers, SEQUENCE_NUMBER.type),
        pa.array(chunk.sub_sequence_numbers, SUB_SEQUENCE_NUMBER.type),
        pa.array(chunk.partition_keys, PARTITION_KEY.type),
        pa.array(chunk.data, DATA.type),
        pa.array(chunk.arrivals_ms, pa.timestamp("ms", tz="UTC")).cast(ARRIVAL.type),
        pa.repeat(pa.scalar(depth, LINEAGE_DEPTH.type), n),
    ]


__all__ = [
    "BATCH_ID",
    "CHANGE_OP",
    "CHANGE_POSITION",
    "DATA",
    "DEAD_LETTERS",
    "DEAD_LETTER_SCHEMA",
    "METADATA",
    "RAW",
    "RESERVED",
    "ROW_SCHEMA",
    "TRANSFORM_INPUT",
    "Columns",
    "check_reserved",
    "chunk_columns",
    "decoded",
    "dictionary_encoded",
    "fields_of",
    "record_columns",
    "schema_from_text",
    "schema_to_text",
]
