"""The decoding pipeline against a plain-Python decoder (tests/decoding/oracle.py): drawn JSON
records (nested objects and lists, nulls and empty objects, integers past 2**53, text that looks
like numbers, fields that change type, malformed and gzip'd records, records of several rows, a
field named like a Kinesis column), cut into any pages, over a table drawn as it stood when the
batch began. Every record is its rows or one dead letter of the oracle's stage; the rows hold
the oracle's values and the table ends with its fields; none of it depends on the cuts.

A new field's type is drawn once per batch: records that disagree on a field the table does not
have yet are typed by the page they share (docs/architecture.md), which the cuts decide.

``make test`` runs a derandomized handful; ``make test-oracle`` runs hundreds
(``KINESIS_BATCH_ORACLE_EXAMPLES``)."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.columns import CHANGE_OP, CHANGE_POSITION, METADATA, RESERVED, decoded
from kinesis_batch.decoding.pipeline import Page, Pipeline
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.output import Output, Sink
from kinesis_batch.routing.routes import SINGLE, RouteRule
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.model import Record
from kinesis_batch.spark.files import TaskFiles
from kinesis_batch.storage.records import CommitRecord, ShardCommit
from tests.decoding.oracle import EMPTY, Dead, Kind, Oracle, Row, Table
from tests.output.support import output_args, read_rows

EXAMPLES = int(os.environ.get("KINESIS_BATCH_ORACLE_EXAMPLES", "0"))
SHARD = "shardId-000000000001"
OURS = {*METADATA.names, CHANGE_OP.name, CHANGE_POSITION.name}
ROUTE_BY = "kind"
ROUTES = ("a", "b")
KEY, SEQUENCE_BY = "id", "v"
CHANGES = ChangeSettings.parse("upsert", key=KEY, sequence_by=SEQUENCE_BY)

SCALARS: list[Kind] = ["bool", "int", "float", "text"]
OBJECT: Kind = ("object", (("x", "int"), ("y", "text")))
KINDS: list[Kind] = [*SCALARS, OBJECT, ("list", "int"), ("list", "text")]
ARROW: dict[str, pa.DataType] = {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(), "text": pa.string()}

TABLE_NAMES = ("a", "b", "o", "l")
NEW_NAMES = ("n", "m", "p")


def arrow(kind: Kind) -> pa.DataType:
    if isinstance(kind, str):
        return ARROW[kind]
    if kind[0] == "object":
        return pa.struct([(name, arrow(child)) for name, child in kind[1]])
    return pa.list_(arrow(kind[1]))


def kind(of: pa.DataType) -> Kind:
    for name, known in ARROW.items():
        if of == known:
            return name
    if pa.types.is_struct(of):  # in name order: which record named a nested field first is the cuts'
        return ("object", tuple(sorted((of.field(i).name, kind(of.field(i).type)) for i in range(of.num_fields))))
    assert pa.types.is_list(of), of
    return ("list", kind(of.value_type))


def values(of: Kind) -> st.SearchStrategy[Any]:
    """Values of a kind, nulls among them (and, for objects and lists, empty ones)."""
    if of == "bool":
        made: st.SearchStrategy[Any] = st.booleans()
    elif of == "int":
        made = st.one_of(st.integers(-5, 5), st.sampled_from([2**53 + 1, 2**63 - 1, -(2**63)]))
    elif of == "float":
        made = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([0.5, -2.0, 1e16]))
    elif of == "text":
        made = st.one_of(st.text(max_size=3), st.sampled_from(["12", "1.5", "true", "null", "2026-11-29"]))
    elif isinstance(of, tuple) and of[0] == "object":
        made = st.fixed_dictionaries({}, optional={name: values(child) for name, child in of[1]})
    else:
        assert isinstance(of, tuple)
        made = st.lists(values(of[1]), max_size=3)
    return st.one_of(st.none(), made)


ANY_VALUE = st.one_of(*(values(k) for k in KINDS), st.sampled_from([2**64, -(2**63) - 1, 1.25]))
MALFORMED = st.sampled_from([b"\xff\xfe not json", b"{", b"[1]", b"3", b'"text"', b"\x1f\x8b\x08\x00junk"])


@st.composite
def batches(
    draw: st.DrawFn, routed: bool = False, changes: bool = False
) -> tuple[dict[str | None, Table], list[bytes], list[int]]:
    """The tables as they stood (by route), a batch of records, and where its pages end; with
    ``changes``, each row has a key (or, rarely, none) and a sequence (or text that orders
    nothing: "soon", or none)."""
    routes: tuple[str | None, ...] = ROUTES if routed else (None,)
    keys: list[int] = []
    tables = {
        route: draw(st.dictionaries(st.sampled_from(TABLE_NAMES), st.sampled_from(KINDS), max_size=3))
        for route in routes
    }
    # One type per new field per route: records that disagree on one are typed by their page.
    new = {route: {name: draw(st.sampled_from(KINDS)) for name in TABLE_NAMES + NEW_NAMES} for route in routes}

    @st.composite
    def body(draw: st.DrawFn, route: str | None) -> dict[str, Any]:
        table = tables[route]
        made: dict[str, Any] = {}
        for name in draw(st.lists(st.sampled_from(TABLE_NAMES + NEW_NAMES), max_size=4, unique=True)):
            if name in table:
                made[name] = draw(st.one_of(values(table[name]), ANY_VALUE))
            else:  # new to this route's table: its batch's type
                made[name] = draw(values(new[route][name]))
        if draw(st.integers(0, 19)) == 0:
            made["shard_id"] = "mine"
        if route is not None:
            made[ROUTE_BY] = route
        if changes:
            keys.append(len(keys))
            if draw(st.integers(0, 9)):
                made[KEY] = keys[-1]  # one key a row: no change supersedes another
            made |= draw(st.sampled_from([{SEQUENCE_BY: 1}, {SEQUENCE_BY: 2**40}, {SEQUENCE_BY: "soon"}, {}]))
        return made

    def encoded(objects: list[dict[str, Any]]) -> bytes:
        return json.dumps(objects[0] if len(objects) == 1 else objects).encode()

    def of_route(route: str | None) -> st.SearchStrategy[bytes]:
        return st.one_of(
            body(route).map(lambda b: encoded([b])),
            body(route).map(lambda b: gzip.compress(encoded([b]))),
            st.lists(body(route), min_size=2, max_size=3).map(encoded),  # a row each
        )

    record = st.one_of(st.sampled_from(routes).flatmap(of_route), MALFORMED)
    payloads = draw(st.lists(record, min_size=1, max_size=14))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(payloads) - 1)), max_size=4)))
    return tables, payloads, [c for c in cuts if c < len(payloads)]


def piped(
    payloads: list[bytes], cuts: list[int], tables: dict[str | None, Table], changes: ChangeSettings | None
) -> dict[str, Any]:
    """The real pipeline's outcome for the records, page by page: each record's rows (by route)
    or dead letter's stage, and the tables' fields at the end."""
    routed = None not in tables
    spec = DecodeSpec(
        DecodeSettings(decode="json"),
        table=None if routed else pa.schema([(n, arrow(k)) for n, k in tables[None].items()]),
        routing=RouteRule.of(ROUTE_BY) if routed else None,
        changes=changes,
        tables={r: pa.schema([(n, arrow(k)) for n, k in t.items()]) for r, t in tables.items() if r is not None},
    )
    pipeline = Pipeline(spec, shard_id=SHARD, depth=0, batch_id=None)
    at = datetime(2026, 11, 29, tzinfo=UTC)
    records = [Record(SHARD, str(100 + i), 0, "k", p, at) for i, p in enumerate(payloads)]
    rows: dict[int, list[tuple[int, str | None, dict[str, Any]]]] = {}
    dead: dict[int, str] = {}
    for start, end in zip([0, *cuts], [*cuts, len(records)], strict=True):
        page = pipeline.page(records[start:end])
        for route, batch in _routes(page):
            for row in batch.to_pylist():
                index = int(row["sequence_number"]) - 100
                fields = {k: v for k, v in row.items() if k not in OURS}
                rows.setdefault(index, []).append((row["record_index"], route, fields))
        if page.dead is not None:
            for letter in page.dead.to_pylist():
                dead[int(letter["sequence_number"]) - 100] = letter["stage"]
    fields = (
        {route: dict(zip(s.names, s.types, strict=True)) for route, s in pipeline.route_fields.items()}
        if routed
        else {None: dict(zip(pipeline.fields_of(SINGLE).names, pipeline.fields_of(SINGLE).types, strict=True))}
    )
    return {"rows": rows, "dead": dead, "fields": fields}


def _routes(page: Page) -> list[tuple[str | None, pa.RecordBatch]]:
    """Each route's rows, the oracle's name for it (None: the one table of a run without routes)."""
    return [(None if route == SINGLE else route, batch) for route, batch in page.routes.items()]


def same(value: Any, expected: Any) -> bool:
    """Equal, where a field the oracle's row does not name (one a later record added) is null,
    and an :data:`EMPTY` one null or empty."""
    if expected is EMPTY:  # nothing but nulls, at any depth
        if isinstance(value, dict):
            return all(same(v, EMPTY) for v in value.values())
        return value is None or (isinstance(value, list) and all(same(v, EMPTY) for v in value))
    if isinstance(value, dict) and isinstance(expected, dict):
        return all(same(value.get(k), expected.get(k)) for k in set(value) | set(expected))
    if isinstance(value, list) and isinstance(expected, list):
        return len(value) == len(expected) and all(same(v, e) for v, e in zip(value, expected, strict=True))
    return type(value) is type(expected) and value == expected


def check(tables: dict[str | None, Table], payloads: list[bytes], cuts: list[int], *, changes: bool = False) -> None:
    oracle = Oracle(
        {route: dict(table) for route, table in tables.items()},
        RESERVED,
        route_by=None if None in tables else ROUTE_BY,
        key=KEY if changes else None,
        sequence_by=SEQUENCE_BY if changes else None,
    )
    expected = [oracle.record(payload) for payload in payloads]
    got = piped(payloads, cuts, tables, CHANGES if changes else None)
    for index, outcome in enumerate(expected):
        where = f"record {index} {payloads[index]!r} (pages end at {cuts})"
        if isinstance(outcome, Dead):
            stages = {outcome.stage, outcome.other} - {None}
            assert got["dead"].get(index) in stages, f"{where}: not one {stages} dead letter: {got}"
            assert index not in got["rows"], where
            continue
        assert isinstance(outcome, Row)
        assert index not in got["dead"], f"{where}: a dead letter ({got['dead'][index]}), the oracle's rows {outcome}"
        rows = sorted(got["rows"].get(index, []), key=lambda r: r[0])
        assert [r[0] for r in rows] == list(range(len(outcome.values))), f"{where}: rows {rows}"
        for (_, route, row), want in zip(rows, outcome.values, strict=True):
            assert route == outcome.route, where
            assert same(row, want), f"{where}: {row} is not the oracle's {want}"
    for route, table in oracle.tables.items():
        have = {name: kind(of) for name, of in got["fields"][route].items()}
        want = {name: kind(arrow(of)) for name, of in table.items()}
        assert have == want, f"route {route}: the fields are {have}, the oracle's {want}"


SETTINGS = settings(
    max_examples=EXAMPLES or 60,
    derandomize=not EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],  # explain's tracing takes minutes
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@given(batch=batches(routed=False))
@SETTINGS
def test_every_record_is_the_oracles_rows_or_dead_letter_whatever_the_pages(
    batch: tuple[dict[str | None, Table], list[bytes], list[int]],
) -> None:
    check(*batch)


@given(batch=batches(routed=True))
@SETTINGS
def test_every_routed_record_is_the_oracles_rows_in_its_routes_table_or_dead_letter_whatever_the_pages(
    batch: tuple[dict[str | None, Table], list[bytes], list[int]],
) -> None:
    check(*batch)


@given(batch=batches(changes=True))
@SETTINGS
def test_a_record_the_changes_stage_refuses_is_one_dead_letter_and_types_no_column_whatever_the_pages(
    batch: tuple[dict[str | None, Table], list[bytes], list[int]],
) -> None:
    check(*batch, changes=True)


@given(batch=batches(routed=True, changes=True))
@SETTINGS
def test_a_routed_record_the_changes_stage_refuses_is_one_dead_letter_whatever_the_pages(
    batch: tuple[dict[str | None, Table], list[bytes], list[int]],
) -> None:
    check(*batch, changes=True)


def test_a_routes_fractions_do_not_retype_another_routes_integers() -> None:
    tables: dict[str | None, Table] = {"a": {}, "b": {"o": "bool"}}
    check(tables, [b'{"kind": "a", "o": 9007199254740993}', b'{"kind": "b", "o": 0.5}'], [])


def test_a_record_the_page_alone_cannot_type_is_a_row_of_the_table_it_names() -> None:
    """Found by this oracle: 2**53 + 1 beside 0.0 is no type without the table's integer column,
    and 2**64 none without its floating one; the route is read from the record as written."""
    tables: dict[str | None, Table] = {"a": {"o": "int"}, "b": {"l": "float"}}
    check(tables, [b'[{"kind": "a", "o": 9007199254740993}, {"kind": "a", "o": 0.0}]'], [])
    check(tables, [b'{"kind": "b", "l": 18446744073709551616}', b'{"kind": "a", "o": 1}'], [])


def test_a_refused_records_text_does_not_type_the_sequence_the_records_after_it_give() -> None:
    check({None: {}}, [b'{"id": 1, "v": "soon"}', b'{"id": 2, "v": 1}', b'{"id": 3, "v": 2}'], [], changes=True)


FORMATS = ["parquet", "delta", "iceberg"]


@pytest.mark.parametrize("format", FORMATS)
@given(batch=batches())
@settings(
    max_examples=EXAMPLES // 4 or 6,
    derandomize=not EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
def test_the_rows_land_in_every_formats_table_as_the_oracle_has_them(
    format: str, batch: tuple[dict[str | None, Table], list[bytes], list[int]]
) -> None:
    """Through the task files and the sink's publish: a first batch makes the table as it stood
    (one record holding each of its fields), then the drawn batch lands on it, and the format's
    own reader gives back the oracle's rows."""
    tables, payloads, cuts = batch
    start = tables[None]
    oracle = Oracle({None: dict(start)}, RESERVED)
    expected = {
        100 + i: outcome for i, payload in enumerate(payloads) if isinstance(outcome := oracle.record(payload), Row)
    }
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        args = output_args(format, "local", Path(folder), patch)
        options = dict(zip(args[::2], args[1::2], strict=True))
        sink = Output(format, options["--output"], options.get("--catalog")).open(app="a", stream="s")
        sink.prepare(decoded())
        witness = {name: _witness(kind) for name, kind in start.items()}
        _publish(sink, "b-1", {None: {}}, [json.dumps(witness).encode()] if witness else [b"{}"], [])
        _publish(sink, "b-2", tables, payloads, cuts)
        rows = pa.Table.from_pydict(read_rows(sink)).to_pylist() if read_rows(sink) else []
    landed = {(int(r["sequence_number"]), r["record_index"]): r for r in rows if r["batch_id"] == "b-2"}
    want = {(seq, index): values for seq, row in expected.items() for index, values in enumerate(row.values)}
    assert set(landed) == set(want), f"{format}: rows of records {sorted(landed)}, the oracle's {sorted(want)}"
    for key, values in want.items():
        row = {k: v for k, v in landed[key].items() if k in TABLE_NAMES + NEW_NAMES}  # not a partition's column
        assert same(row, values), f"{format}: record {key}: {row} is not the oracle's {values}"


def _witness(of: Kind) -> Any:
    """A value that gives a new column the kind ``of``."""
    if isinstance(of, str):
        return {"bool": True, "int": 1, "float": 0.5, "text": "t"}[of]
    if of[0] == "object":
        return {name: _witness(child) for name, child in of[1]}
    return [_witness(of[1])]


def _publish(
    sink: Sink, batch_id: str, tables: dict[str | None, Table], payloads: list[bytes], cuts: list[int]
) -> None:
    """One batch of one shard, decoded page by page over ``tables``' fields, staged as a Spark
    task stages it, and published."""
    table = pa.schema([(n, arrow(k)) for n, k in tables[None].items()])
    pipeline = Pipeline(
        DecodeSpec(DecodeSettings(decode="json"), table=table), shard_id=SHARD, depth=0, batch_id=batch_id
    )
    at = datetime(2026, 11, 29, tzinfo=UTC)
    records = [Record(SHARD, str(100 + i), 0, "k", p, at) for i, p in enumerate(payloads)]
    data = sink.data(batch_id)
    data.make_dirs()
    with TaskFiles(data, "t", sink.file_layout(64 * 2**20), schemas=True) as files:
        for start, end in zip([0, *cuts], [*cuts, len(records)], strict=True):
            page = pipeline.page(records[start:end])
            if page.rows is not None:
                files.write(page.rows)
    shard = ShardCommit(
        SHARD, Checkpoint.trim_horizon(), Checkpoint.at(records[-1].sequence_number), len(records), False
    )
    record = CommitRecord(batch_id, batch_id, "s", at, (shard,))
    assert sink.publish(record, files.files) is True
