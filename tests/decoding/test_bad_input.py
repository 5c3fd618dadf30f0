"""Every mistake in the decoding settings is one line, exit 2, before any lease is taken or
anything created; an unreachable registry is exit 4. A bad record with ``--on-bad-record fail``,
found inside a Spark task, is one line and exit 2 too, with nothing published or moved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch import cli
from kinesis_batch.aws import glue_client
from tests.decoding.support import descriptor_set, put_payloads, register
from tests.streams import StreamFactory


def cases(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    bad_avro = tmp_path / "bad.avsc"
    bad_avro.write_text(json.dumps({"type": "record", "name": "R", "fields": [{"name": "x", "type": "nope"}]}))
    reserved = tmp_path / "reserved.json"
    reserved.write_text(json.dumps({"type": "object", "properties": {"shard_id": {"type": "string"}}}))
    orders = tmp_path / "orders.json"
    orders.write_text(
        json.dumps({"type": "object", "properties": {"id": {"type": "string"}, "at": {"type": "integer"}}})
    )
    upsert = ["--decode", "json", "--schema", str(orders), "--format", "delta", "--changes", "upsert"]
    per_route, bad_route, unlisted = (tmp_path / name for name in ("per-route", "bad-route", "unlisted"))
    for folder, file in ((per_route, "click.json"), (bad_route, "_click.json"), (unlisted, "buy.json")):
        folder.mkdir()
        (folder / file).write_text("{not json" if folder is per_route else json.dumps({"type": "object"}))
    routed = ["--decode", "json", "--route-by", "type", "--output", str(tmp_path / "out" / "{route}")]
    protos = tmp_path / "set.desc"
    protos.write_bytes(descriptor_set('syntax = "proto3"; message Order { string id = 1; }'))
    return {
        "missing schema file": (["--decode", "json", "--schema", str(tmp_path / "none.json")], "cannot read it"),
        "schema that does not parse": (["--decode", "json", "--schema", str(bad_json)], "is not JSON"),
        "avro schema that does not parse": (["--decode", "avro", "--schema", str(bad_avro)], "is not an Avro schema"),
        "message not in the set": (
            ["--decode", "protobuf", "--schema", str(protos), "--message", "Nope"],
            "has no message Nope",
        ),
        "transform not importable": (["--decode", "json", "--transform", "nowhere:f"], "cannot import nowhere"),
        "transform not callable": (["--decode", "json", "--transform", "json:nothing"], "has no function nothing"),
        "unknown registry": (["--decode", "avro", "--schema", "glue://nope/orders"], "no such registry or schema"),
        "reserved field": (["--decode", "json", "--schema", str(reserved)], "has fields shard_id, the names"),
        "raw with a schema": (["--schema", str(bad_json)], "need(s) --decode"),
        "key the schema lacks": ([*upsert, "--key", "id,nope"], f"--key nope: --schema {orders} has no field nope"),
        "sequence field the schema lacks": (
            [*upsert, "--key", "id", "--sequence-by", "when"],
            f"--sequence-by when: --schema {orders} has no field when",
        ),
        "route's schema that does not parse": (
            [*routed, "--schema", str(per_route)],
            f"--schema {per_route / 'click.json'} is not JSON",
        ),
        "route's schema named no route": ([*routed, "--schema", str(bad_route)], "'_click' cannot name a table"),
        "route's schema for a route not taken": (
            [*routed, "--routes", "click", "--schema", str(unlisted)],
            "route 'buy' is not one of --routes",
        ),
        "schema folder without routing": (
            ["--decode", "json", "--schema", str(unlisted)],
            "is a folder: one JSON Schema per route, with --route-by and --decode json",
        ),
        "template without routing": (
            ["--decode", "json", "--output", str(tmp_path / "out" / "{route}")],
            "holds {route}: say which field names the table (--route-by)",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing schema file",
        "schema that does not parse",
        "avro schema that does not parse",
        "message not in the set",
        "transform not importable",
        "transform not callable",
        "unknown registry",
        "reserved field",
        "raw with a schema",
        "key the schema lacks",
        "sequence field the schema lacks",
        "route's schema that does not parse",
        "route's schema named no route",
        "route's schema for a route not taken",
        "schema folder without routing",
        "template without routing",
    ],
)
def test_a_bad_decoding_setting_is_one_line_and_exit_2_before_anything_is_made(
    case: str,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = streams.create(shards=1)
    flags, says = cases(tmp_path)[case]
    output = tmp_path / "out"
    code = cli.main(["run", "--stream", name, "--output", str(output), *flags], spark=lambda: spark)
    out, err = capsys.readouterr()
    assert code == 2 and out == "", err
    (line,) = err.splitlines()
    assert says.replace("(", "").replace(")", "") in line.replace("(", "").replace(")", ""), line
    assert f"kinesis-batch-{name}" not in dynamodb.list_tables()["TableNames"], "a lease table was made"
    assert not output.exists(), "the output was made"


def test_a_declared_schema_that_conflicts_with_the_table_is_refused_naming_the_column(
    dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltalake import DeltaTable

    name = streams.create(shards=1)
    table = str(tmp_path / "orders")
    DeltaTable.create(table, schema=pa.schema([("id", pa.string())]))
    schema = tmp_path / "orders.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"id": {"type": "integer"}}}))
    run = ["run", "--stream", name, "--format", "delta", "--output", table, "--decode", "json", "--schema", str(schema)]
    code = cli.main(run, spark=lambda: spark)
    _, err = capsys.readouterr()
    assert code == 2 and "id is string in the table, int64 in the schema" in err, err
    assert f"kinesis-batch-{name}" not in dynamodb.list_tables()["TableNames"]


def test_an_unreachable_registry_is_retryable(
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    register(glue_client(), "shop", "orders", "AVRO", {"type": "record", "name": "O", "fields": []})
    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", "http://127.0.0.1:9")
    name = streams.create(shards=1)
    run = [
        "run",
        "--stream",
        name,
        "--output",
        str(tmp_path / "o"),
        "--decode",
        "avro",
        "--schema",
        "glue://shop/orders",
    ]
    code = cli.main(run, spark=lambda: spark)
    _, err = capsys.readouterr()
    assert code == 4 and "GetSchemaVersion" in err, err


def test_a_bad_record_with_on_bad_record_fail_is_one_line_from_the_task_and_nothing_moves(
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = streams.create(shards=1)
    put_payloads(kinesis, name, [json.dumps({"id": i}).encode() for i in range(5)] + [b"{oops"])
    output = str(tmp_path / "events")
    run = ["run", "--stream", name, "--output", output, "--decode", "json", "--read-limits", "none"]
    code = cli.main([*run, "--on-bad-record", "fail"], spark=lambda: spark)
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, err
    assert "Traceback" not in err and len([line for line in lines if "decode failed" in line]) == 1, err
    assert lines[-1].startswith("kinesis-batch: error: shard shardId-000000000000, sequence number "), err
    assert "decode failed: not JSON" in lines[-1] and "--on-bad-record fail" in lines[-1], err
    assert lines[-1].endswith("; nothing was published"), err

    assert cli.main(["status", "--stream", name, "--json"], spark=lambda: spark) == 0
    (shard,) = json.loads(capsys.readouterr().out)
    assert (shard["checkpoint"], shard["pending_batch"]) == ("TRIM_HORIZON", None)
    assert not list(Path(output).glob("batch_id=*")) and not list(Path(f"{output}_dead_letter").glob("batch_id=*"))

    # Nothing was lost: the default run reads the same records again, the bad one a dead letter.
    assert cli.main([*run, "--json"], spark=lambda: spark) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["records"], report["rows"], report["dead_letters"]) == (6, 5, 1)


def test_decoded_rows_into_a_folder_of_raw_rows_and_back_are_refused_in_one_line(
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = streams.create(shards=1)
    put_payloads(kinesis, name, [b'{"id": 1}'])
    raw, typed = tmp_path / "raw", tmp_path / "typed"
    base = ["run", "--stream", name, "--read-limits", "none"]
    as_raw, as_typed = ["--table", f"{name}-raw"], ["--table", f"{name}-typed", "--decode", "json"]
    assert cli.main([*base, "--output", str(raw), *as_raw], spark=lambda: spark) == 0
    assert cli.main([*base, "--output", str(typed), *as_typed], spark=lambda: spark) == 0
    capsys.readouterr()
    put_payloads(kinesis, name, [b'{"id": 2}'])

    # Each lease table moved to the other's folder on purpose: the folder's own check refuses.
    code = cli.main([*base, "--output", str(raw), *as_typed, "--move-output"], spark=lambda: spark)
    err = capsys.readouterr().err
    assert code == 2 and "holds raw rows (a data column of record bytes); decoded rows need a folder" in err, err
    code = cli.main([*base, "--output", str(typed), *as_raw, "--move-output"], spark=lambda: spark)
    err = capsys.readouterr().err
    assert code == 2 and "holds decoded rows; raw rows (a data column of record bytes) need a folder" in err, err
    assert len(list(raw.glob("batch_id=*"))) == len(list(typed.glob("batch_id=*"))) == 1
