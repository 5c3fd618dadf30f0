"""Decoding runs on the local stack, with the formats' own readers: a stream of good and bad JSON
lands typed rows (a new field half-way becomes a column) and exactly its bad records as dead
letters with their reasons, and the counts add up in the run report, ``status --json`` and
``history --runs``; declared schemas, a table made first, the registry's Avro, a descriptor
set's Protobuf and CloudWatch Logs payloads land typed rows too."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch import cli
from kinesis_batch.aws import glue_client
from tests.decoding.support import (
    avro_datum,
    dead_letter_args,
    descriptor_set,
    framed,
    message_class,
    put_payloads,
    register,
)
from tests.decoding.test_builtins import CONTROL, subscription
from tests.output.support import output_args, read_rows, sink_of
from tests.streams import StreamFactory

KINDS = [("parquet", "local"), ("delta", "s3"), ("iceberg", "local")]


def run_cli(capsys: pytest.CaptureFixture[str], spark: Any, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args), spark=lambda: spark)
    out, err = capsys.readouterr()
    return code, out, err


def mixed(start: int, count: int) -> tuple[list[bytes], list[bytes]]:
    """Good events (a nested object, a list; ``country`` from the middle on) and bad records:
    malformed JSON, JSON that is no object, an ``id`` that turned into text. (payloads, bad)"""
    payloads, bad = [], []
    for i in range(start, start + count):
        event: dict[str, Any] = {
            "id": i,
            "user": {"name": f"u{i}"},
            "tags": ["a", str(i % 3)],
            "at": "2026-11-25T10:00:00Z",
        }
        if i >= start + count // 2:
            event["country"] = "FR"
        payload = json.dumps(event).encode()
        if i % 17 == 5:
            payload = b"{not json" + str(i).encode()
        elif i % 17 == 9:
            payload = str(i).encode()
        elif i % 17 == 13 and i > start + 10:
            payload = json.dumps({"id": f"#{i}"}).encode()
        payloads.append(payload)
        if payload != json.dumps(event).encode():
            bad.append(payload)
    return payloads, bad


@pytest.mark.contract("spark", why="a typed run's columns through this PySpark")
@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_a_mixed_stream_lands_typed_rows_a_new_column_and_exactly_its_bad_records_as_dead_letters(
    format: str,
    where: str,
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = streams.create(shards=2)
    payloads, bad = mixed(0, 300)
    put_payloads(kinesis, name, payloads)
    output = output_args(format, where, tmp_path, monkeypatch)
    run = ("run", "--stream", name, *output, "--decode", "json", "--read-limits", "none", "--json")
    code, out, err = run_cli(capsys, spark, *run)
    assert code == 0, err
    report = json.loads(out)
    assert (report["records"], report["dead_letters"], report["rows"]) == (300, len(bad), 300 - len(bad))

    table = sink_of(output, app=f"kinesis-batch-{name}", stream=name)
    dead = sink_of(dead_letter_args(output), app=f"kinesis-batch-{name}", stream=name)
    rows, letters = read_rows(table), read_rows(dead)
    assert sorted(rows["id"]) == sorted(json.loads(p)["id"] for p in payloads if p not in bad)
    assert {"country", "user", "tags", "record_index"} <= set(rows) and "data" not in rows
    assert sorted(letters["data"]) == sorted(bad)
    reasons = {bytes(d): (s, r) for d, s, r in zip(letters["data"], letters["stage"], letters["reason"], strict=True)}
    assert all(reasons[p][0] == "decode" and reasons[p][1].startswith("not JSON") for p in bad if p.startswith(b"{not"))
    assert all(reasons[p][1].startswith("not a JSON object") for p in bad if p.isdigit())
    changed = [p for p in bad if p.startswith(b'{"id": "#')]
    assert changed and all(reasons[p] == ("schema", reasons[p][1]) and "type changed" in reasons[p][1] for p in changed)
    keys = list(zip(rows["shard_id"], rows["sequence_number"], rows["record_index"], strict=True))
    assert len(keys) == len(set(keys)), "a row twice"

    # A later run keeps the table's types: an id as text is a dead letter against them.
    more = [json.dumps({"id": 1000 + i, "user": {"name": "n"}}).encode() for i in range(20)] + [b'{"id": "late"}']
    put_payloads(kinesis, name, more)
    code, out, err = run_cli(capsys, spark, *run)
    assert code == 0, err
    assert json.loads(out)["dead_letters"] == 1
    late = read_rows(dead)
    assert b'{"id": "late"}' in late["data"] and len(read_rows(table)["id"]) == 300 - len(bad) + 20

    code, out, err = run_cli(capsys, spark, "status", "--stream", name, *output, "--json")
    assert code == 0, err
    shards = [row for row in json.loads(out) if "output_batch" in row]
    assert sum(row["output_records"] for row in shards) == 21
    assert sum(row["output_dead_letters"] for row in shards) == 1
    assert all(
        r["output_records"] == r["output_rows"] + r["output_dead_letters"] + r["output_filtered"] for r in shards
    )
    code, out, err = run_cli(capsys, spark, "history", "--stream", name, "--runs", "--json")
    assert code == 0, err
    runs = json.loads(out)
    assert [(r["records"], r["dead_letters"]) for r in runs] == [(300, len(bad)), (21, 1)]
    assert all(r["records"] == r["rows"] + r["dead_letters"] + r["filtered"] for r in runs)


def test_declared_times_are_timestamps_and_a_table_made_first_keeps_its_columns(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltalake import DeltaTable

    name = streams.create(shards=1)
    events = [{"id": i, "at": "2026-11-25T10:00:00Z" if i % 2 else 1795600800000, "note": None} for i in range(6)]
    put_payloads(kinesis, name, [json.dumps(e).encode() for e in events] + [b'{"id": 9, "at": "later"}'])
    schema = tmp_path / "events.schema.json"
    properties = {
        "id": {"type": "integer"},
        "at": {"type": "string", "format": "date-time"},
        "note": {"type": ["string", "null"]},
    }
    schema.write_text(json.dumps({"type": "object", "properties": properties}))
    made_first = str(tmp_path / "events")
    DeltaTable.create(made_first, schema=pa.schema([("id", pa.int64()), ("note", pa.string()), ("owner", pa.string())]))
    run = ("run", "--stream", name, "--format", "delta", "--output", made_first, "--decode", "json")
    code, _, err = run_cli(capsys, spark, *run, "--schema", str(schema), "--read-limits", "none")
    assert code == 0, err
    table = DeltaTable(made_first)
    kinds = {field.name: field.type for field in pa.schema(table.schema().to_arrow())}
    assert kinds["at"] == pa.timestamp("us", tz="UTC") and "owner" in kinds and "shard_id" in kinds
    rows = table.to_pyarrow_table().to_pylist()
    assert {row["at"] for row in rows} == {datetime(2026, 11, 25, 10, tzinfo=UTC)} and len(rows) == 6
    (letter,) = DeltaTable(made_first + "_dead_letter").to_pyarrow_table().to_pylist()
    assert letter["stage"] == "schema" and letter["reason"].startswith("not a time: at is 'later'")


def test_the_registrys_avro_and_a_descriptor_sets_protobuf_land_typed_rows(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    glue = glue_client()
    v1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}, {"name": "qty", "type": "int"}]}
    v2 = {**v1, "fields": [*v1["fields"], {"name": "country", "type": ["null", "string"], "default": None}]}
    first, second = register(glue, "shop", "orders", "AVRO", v1), register(glue, "shop", "orders", "AVRO", v2)
    avro = streams.create(shards=1)
    put_payloads(kinesis, avro, [framed(first, avro_datum(v1, {"id": i, "qty": i})) for i in range(5)])
    put_payloads(kinesis, avro, [framed(second, avro_datum(v2, {"id": 5, "qty": 1, "country": "FR"}), compress=True)])
    out_avro = tmp_path / "orders"
    code, _, err = run_cli(capsys, spark, "run", "--stream", avro, "--output", str(out_avro), "--decode", "avro",
                           "--schema", "glue://shop/orders", "--read-limits", "none")  # fmt: skip
    assert code == 0, err
    rows = read_rows(sink_of(("--format", "parquet", "--output", str(out_avro))))
    assert sorted(zip(rows["id"], rows["country"], strict=True)) == [(i, None) for i in range(5)] + [(5, "FR")]

    proto = (
        'syntax = "proto3";\npackage shop;\nmessage Order { string id = 1; int64 qty = 2; repeated string tags = 3; }\n'
    )
    path = tmp_path / "orders.desc"
    path.write_bytes(descriptor_set(proto))
    order = message_class(proto, "shop.Order")
    messages = streams.create(shards=1)
    put_payloads(kinesis, messages, [order(id=f"o{i}", qty=i, tags=["t"]).SerializeToString() for i in range(4)])
    out_proto = tmp_path / "messages"
    code, _, err = run_cli(
        capsys, spark, "run", "--stream", messages, "--output", str(out_proto),
        "--decode", "protobuf", "--schema", str(path), "--message", "shop.Order", "--read-limits", "none",
    )  # fmt: skip
    assert code == 0, err
    rows = read_rows(sink_of(("--format", "parquet", "--output", str(out_proto))))
    assert sorted(rows["id"]) == ["o0", "o1", "o2", "o3"] and rows["tags"][0] == ["t"]


def test_cloudwatch_logs_payloads_land_one_row_per_log_event(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = streams.create(shards=1)
    events = [(f"{i:056d}", 1795600800000 + i, f"line {i}") for i in range(30)]
    payloads = [gzip.compress(json.dumps(subscription(events[i : i + 10])).encode()) for i in range(0, 30, 10)]
    put_payloads(kinesis, name, [*payloads, gzip.compress(json.dumps(CONTROL).encode())])
    out = tmp_path / "logs"
    code, stdout, err = run_cli(capsys, spark, "run", "--stream", name, "--output", str(out), "--decode", "json",
                                "--transform", "cloudwatch-logs", "--read-limits", "none", "--json")  # fmt: skip
    assert code == 0, err
    report = json.loads(stdout)
    assert (report["records"], report["rows"], report["dead_letters"], report["filtered"]) == (4, 30, 0, 1)
    rows = read_rows(sink_of(("--format", "parquet", "--output", str(out))))
    assert sorted(rows["message"]) == sorted(message for _, _, message in events)
    assert set(rows["log_group"]) == {"/aws/lambda/orders"} and max(rows["record_index"]) == 9
