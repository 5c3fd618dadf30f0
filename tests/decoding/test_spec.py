"""What a run's start resolved of its decoding, as it travels to the tasks and to later steps
in the plan: written as JSON and read back whole, every field drawn; the fields the rows are
fitted to first; a route's declared fields."""

from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.routing.routes import RouteRule

FIELDS = st.lists(
    st.tuples(
        st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True),
        st.sampled_from([pa.int64(), pa.float32(), pa.string(), pa.timestamp("us", tz="UTC"), pa.list_(pa.int8())]),
    ),
    max_size=4,
    unique_by=lambda f: f[0],
).map(pa.schema)
ROUTES = st.dictionaries(st.sampled_from(["orders", "items", "users"]), FIELDS, max_size=3)
SPECS = st.builds(
    DecodeSpec,
    settings=st.sampled_from(
        [DecodeSettings(decode="json"), DecodeSettings(decode="json", transform="cloudwatch-logs", decompress="gzip")]
    ),
    declared=st.none() | FIELDS,
    schema_text=st.none() | st.just('{"type": "record", "name": "r", "fields": []}'),
    descriptors=st.none() | st.binary(min_size=1, max_size=32),
    glue=st.none() | st.just({"endpoint": None, "region": "eu-west-1"}),
    table=st.none() | FIELDS,
    widen=st.booleans(),
    changes=st.none() | st.just(ChangeSettings("upsert", ("pk",), sequence_by="ts")),
    routing=st.none() | st.just(RouteRule.of("type", "orders,items", 5)) | st.just(RouteRule.of("meta.table")),
    tables=ROUTES,
    declared_by_route=ROUTES,
)


@given(SPECS)
def test_a_spec_reads_back_from_its_json_as_it_was(spec: DecodeSpec) -> None:
    assert DecodeSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


def test_rows_are_fitted_first_to_the_table_as_it_is_else_to_the_declared_fields() -> None:
    declared, table = pa.schema([("id", pa.int64())]), pa.schema([("id", pa.int64()), ("name", pa.string())])
    settings = DecodeSettings(decode="json")
    assert DecodeSpec(settings, declared=declared, table=table).starting_fields() == table
    assert DecodeSpec(settings, declared=declared, table=pa.schema([])).starting_fields() == declared, "a new table"
    assert DecodeSpec(settings).starting_fields() == pa.schema([]), "inferred from the records"
    widened = DecodeSpec(settings).with_table(table, widen=False)
    assert widened.table == table and widened.widen is False


def test_a_routes_declared_fields_are_its_own_file_s_else_everyones() -> None:
    everyone, own = pa.schema([("id", pa.int64())]), pa.schema([("sku", pa.string())])
    spec = DecodeSpec(DecodeSettings(decode="json"), declared=everyone, declared_by_route={"items": own})
    assert spec.declared_for("items") == own and spec.declared_for("orders") == everyone
