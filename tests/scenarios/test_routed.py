"""One stream, many tables (``--route-by``): each kind of record lands in a table of its own,
made at first sight, with its own columns; a kind that appears later makes its table then;
records without a usable route, and those of new kinds past ``--max-new-tables``, are dead
letters with the reason. Every record is once in one table or once a dead letter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kinesis_batch.aws import dynamodb_client, kinesis_client, s3_settings
from kinesis_batch.output import Output
from kinesis_batch.routing.routes import DEFAULT_MAX_NEW
from kinesis_batch.run import CatchUpRun
from tests.openlineage.support import events, file_transport
from tests.output.support import output_args, read_rows, run_config
from tests.streams import StreamFactory, put

#: Parquet here; routed runs end to end into Delta on S3 are the DAG's and Dagster's tests
#: (tests/dags/test_kinesis_routed.py, tests/dagster/test_routed.py), into Iceberg the crash
#: test's, and every format's table-by-table publish is tests/output/test_composite.py's.
KINDS = [("parquet", "local")]


def routed_output(format: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """A fresh output of this kind, as a template: one table per route."""
    args = list(output_args(format, where, tmp_path, monkeypatch))
    at = args.index("--output") + 1
    args[at] = f"{args[at]}_{{route}}" if format == "iceberg" else f"{args[at]}/{{route}}"
    return tuple(args)


def event(i: int, kind: str | None) -> bytes:
    """A record of ``kind``; kinds share the field ``x`` with different types (a number for
    clicks, text for the others), as DMS's tables share ``id``."""
    body: dict[str, Any] = {"n": i, "x": i if kind == "click" else f"v{i}"}
    if kind is not None:
        body["type"] = kind
    return json.dumps(body).encode()


def landed(config: Any, route: str) -> list[int]:
    """The ``n`` of every row in ``route``'s table."""
    table = Output(config.format, config.output.replace("{route}", route), config.catalog)
    rows = read_rows(table.open(app=config.table, stream=config.stream, s3=s3_settings()))
    return sorted(rows.get("n", []))


def dead_letters(config: Any) -> dict[int, str]:
    """The dead letters' ``n`` -> reason."""
    rows = read_rows(config.destination.dead_letter().open(app=config.table, stream=config.stream, s3=s3_settings()))
    pairs = zip(rows.get("data", []), rows.get("reason", []), strict=True)
    return {json.loads(data)["n"]: reason for data, reason in pairs}


def run(config: Any, spark: Any, **options: Any) -> Any:
    """One run in this process on the shared Spark (``options``: CatchUpRun's, e.g. its clock)."""
    return CatchUpRun(
        config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark, **options
    ).run()


@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_each_kind_lands_in_its_own_table_made_at_first_sight_and_the_unroutable_are_dead_letters(
    format: str, where: str, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    first = ["click", "view", None, "buy", "click", "view!"]  # None: no route; "view!": cannot name a table
    put(kinesis, name, 60, payload=lambda i: event(i, first[i % len(first)]))
    output = routed_output(format, where, tmp_path, monkeypatch)
    config = run_config(name, output, "router", decode="json", route_by="type", read_limits="none")
    lineage = tmp_path / "lineage.jsonl"  # and the runs' OpenLineage events, valid
    for key, value in file_transport(lineage).items():
        monkeypatch.setenv(key, value)

    report = run(config, spark)

    assert report.published
    expect = {kind: [i for i in range(60) if first[i % len(first)] == kind] for kind in ("click", "view", "buy")}
    for kind, numbers in expect.items():
        assert landed(config, kind) == numbers, kind
    dead = dead_letters(config)
    assert sorted(dead) == [i for i in range(60) if first[i % len(first)] in (None, "view!")]
    assert all(reason.startswith(("no route", "unusable route")) for reason in dead.values()), set(dead.values())
    sink = config.open_sink(s3_settings())
    assert sink.known == {"buy", "click", "view"}

    # A later run: a kind seen for the first time makes its table; the others' tables grow.
    put(kinesis, name, 20, start=60, payload=lambda i: event(i, "refund" if i % 2 else "click"))
    assert run(config, spark).published
    assert landed(config, "refund") == list(range(61, 80, 2))
    assert landed(config, "click") == expect["click"] + list(range(60, 80, 2))
    assert sorted(dead_letters(config)) == sorted(dead), "the second run had no dead letters"
    _, complete, _, again = events(lineage)
    written = {out["name"].rsplit("/", 1)[-1].rsplit(".", 1)[-1]: out for out in complete["outputs"]}
    rows = {table: out["outputFacets"]["outputStatistics"]["rowCount"] for table, out in written.items()}
    assert sorted(rows.values()) == sorted([*(len(n) for n in expect.values()), len(dead)]), (
        rows
    )  # each table, dead letters
    assert len(again["outputs"]) == 3  # the second run wrote refund's and click's tables, and the dead letters


def test_a_thousand_route_values_make_at_most_max_new_tables_tables_and_the_rest_are_dead_letters(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=2)
    kinds = [f"kind{k:04d}" for k in range(1000)]  # a producer gone wrong: a new value per record
    put(kinesis, name, 1000, payload=lambda i: event(i, kinds[i]))
    output = routed_output("parquet", "local", tmp_path, monkeypatch)
    config = run_config(name, output, "router", decode="json", route_by="type", read_limits="none")
    progress: list[str] = []

    run = CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark,
                     progress=progress.append)  # fmt: skip
    assert run.run().published

    made = kinds[:DEFAULT_MAX_NEW]  # the first by name
    for number, kind in enumerate(made):
        assert landed(config, kind) == [number]
    root = Path(config.output).parent
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith("_")) == made, "tables past the limit"
    dead = dead_letters(config)
    assert sorted(dead) == list(range(DEFAULT_MAX_NEW, 1000))
    assert {reason.split(":")[0] for reason in dead.values()} == {"too many new tables"}
    assert "kind0500 would be a table past --max-new-tables 20" in dead[500]
    said = [line for line in progress if "--max-new-tables 20" in line]
    assert len(said) == 1 and "kind0020, kind0021" in said[0] and "980 records are dead letters" in said[0], said
    record = run.output.committed(run.run_id)
    assert record is not None and record.records == 1000
    assert sum(shard.landing.dead_letters for shard in record.shards if shard.landing) == 980


def test_a_routes_schema_file_declares_its_tables_columns_and_the_other_routes_are_inferred(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=1)
    put(
        kinesis,
        name,
        20,
        payload=lambda i: json.dumps({"n": i, "type": "buy" if i % 2 else "click", "amount": i}).encode(),
    )
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    declared = {"n": {"type": "integer"}, "amount": {"type": "number"}, "note": {"type": "string"}}
    (schemas / "buy.json").write_text(json.dumps({"type": "object", "properties": declared}))
    output = routed_output("parquet", "local", tmp_path, monkeypatch)
    config = run_config(name, output, "router", decode="json", route_by="type", schema=str(schemas), read_limits="none")

    assert run(config, spark).published

    def table(route: str) -> Any:
        return Output(config.format, config.output.replace("{route}", route)).open(app=config.table, stream=name)

    buy, click = read_rows(table("buy")), read_rows(table("click"))
    assert sorted(buy["amount"]) == [float(i) for i in range(1, 20, 2)] and buy["note"] == [None] * 10
    assert sorted(click["amount"]) == list(range(0, 20, 2)) and "note" not in click
    assert all(isinstance(value, float) for value in buy["amount"]), "declared a number: the column is a double"


def test_a_route_naming_a_place_this_consumer_did_not_make_is_dead_letters_and_another_stream_is_refused(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltalake import DeltaTable, write_deltalake

    from tests.scenarios.test_run_formats import run_cli

    shared = tmp_path / "lake"  # a folder of tables several teams write
    theirs = pa.table({"user": ["a", "b"], "n": [1, 2]})
    write_deltalake(str(shared / "c2a"), theirs)  # somebody's table
    (shared / "files").mkdir(parents=True)
    pq.write_table(theirs, shared / "files" / "part-0.parquet")  # somebody's files
    write_deltalake(str(shared / "nest" / "inner"), theirs)  # a folder of tables
    name = streams.create(shards=1)
    kinds = ["click", "c2a", "files", "nest", "click", "View", "view"]  # View and view: one name folded
    put(kinesis, name, 14, payload=lambda i: event(i, kinds[i % len(kinds)]))
    run = ("run", "--stream", name, "--format", "delta", "--output", f"{shared}/{{route}}", "--decode", "json")
    run += ("--route-by", "type", "--read-limits", "none")

    code, out, err = run_cli(capsys, spark, *run)

    assert code == 0, err
    assert "14 records (6 rows in 2 tables: View 2, click 4; 8 dead letters)" in out, out
    said = [line for line in err.splitlines() if "not this consumer's table" in line]
    assert len(said) == 3 and all("are dead letters" in line for line in said), err
    assert "route: view and View would be one table where names fold case" in err, err
    assert "route: 2 new tables: View, click" in err, err
    assert DeltaTable(str(shared / "c2a")).to_pyarrow_table() == theirs, "written into somebody's table"
    assert DeltaTable(str(shared / "c2a")).version() == 0
    assert sorted(p.name for p in (shared / "files").iterdir()) == ["part-0.parquet"]
    dead = DeltaTable(f"{shared}/_dead_letter").to_pyarrow_table().to_pydict()
    reasons = {json.loads(data)["type"]: reason for data, reason in zip(dead["data"], dead["reason"], strict=True)}
    assert set(reasons) == {"c2a", "files", "nest", "view"}
    assert reasons.pop("view").startswith("route collides: view and View"), reasons
    assert all(reason.startswith("not this consumer's table: ") for reason in reasons.values()), reasons
    assert f"{shared}/c2a, a table this consumer did not make" in reasons["c2a"], reasons
    code, out, err = run_cli(capsys, spark, "status", "--stream", name, "--json")
    assert code == 0 and [s["lease_owner"] for s in json.loads(out)] == [None], out

    other = streams.create(shards=1)
    put(kinesis, other, 2, payload=lambda i: event(i, "click"))
    code, out, err = run_cli(capsys, spark, *run[:2], other, *run[3:])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"its tables are stream {name}'s" in err and "give each stream an output of its own" in err, err
