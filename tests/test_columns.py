"""The columns of every output: raw rows, decoded rows and dead letters share their metadata's
names; a decoded field may not take one; schemas travel as text exactly; a chunk's columns are
its records' columns, built without an object per record."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.columns import (
    DEAD_LETTER_SCHEMA,
    METADATA,
    RAW,
    RESERVED,
    ROW_SCHEMA,
    chunk_columns,
    decoded,
    fields_of,
    record_columns,
    schema_from_text,
    schema_to_text,
)
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.shards.chunk import Chunk


def test_every_output_shares_the_metadatas_names() -> None:
    raw, dead = set(ROW_SCHEMA.names), set(DEAD_LETTER_SCHEMA.names)
    assert raw <= dead and dead - raw == {"stage", "reason"}
    assert set(METADATA.names) - raw == {"record_index"} and raw - set(METADATA.names) == {"data"}
    assert (
        RAW.schema(batch_column=True).names[-1] == "batch_id" and "batch_id" not in RAW.schema(batch_column=False).names
    )


def test_a_decoded_table_is_its_metadata_then_its_fields_and_its_fields_are_all_but_the_metadata() -> None:
    fields = pa.schema([("id", pa.int64()), ("user", pa.struct([("name", pa.string())]))])
    schema = decoded(fields).schema(batch_column=True)
    assert schema.names == [*METADATA.names, "id", "user", "batch_id"]
    assert fields_of(schema) == fields


@pytest.mark.parametrize("name", sorted(RESERVED))
def test_a_declared_field_may_not_take_a_name_of_ours(name: str) -> None:
    with pytest.raises(IllegalArgumentError, match=f"has field\\(s\\) {name}, the name") as caught:
        decoded(pa.schema([(name, pa.string()), ("ok", pa.int64())]))
    assert "\n" not in str(caught.value)


SCHEMAS = st.lists(
    st.tuples(
        st.from_regex(r"[a-z]{1,8}", fullmatch=True),
        st.sampled_from(
            [
                pa.int64(),
                pa.string(),
                pa.decimal128(38, 9),
                pa.timestamp("us", tz="UTC"),
                pa.list_(pa.float32()),
                pa.map_(pa.string(), pa.int32()),
                pa.struct([("a", pa.list_(pa.date32()))]),
            ]
        ),
    ),
    max_size=6,
    unique_by=lambda f: f[0],
).map(pa.schema)


@given(SCHEMAS)
def test_a_schema_travels_as_text_exactly(schema: pa.Schema) -> None:
    assert schema_from_text(schema_to_text(schema)).equals(schema, check_metadata=True)


def test_a_chunks_columns_are_its_records_columns() -> None:
    arrivals = [1764064800000, 1764064800123]
    chunk = Chunk("shardId-1", ["49" + "0" * 54, "5" * 56], [0, 3], ["k1", "k2"], [b"a", b"b"], arrivals)
    built = pa.Table.from_arrays(chunk_columns(chunk, 2), schema=ROW_SCHEMA)
    listed = pa.Table.from_pydict(record_columns(list(chunk.records()), 2, data=True), schema=ROW_SCHEMA)
    assert built.equals(listed)
    assert built.column("approximate_arrival_timestamp").to_pylist()[1] == datetime(
        2025, 11, 25, 10, 0, 0, 123000, tzinfo=UTC
    )
    assert "data" not in record_columns(list(chunk.records()), 2, data=False)
