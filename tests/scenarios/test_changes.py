"""Streams of changes into tables of current state, whole runs against the stack: the table
equals an independent fold of every change sent (tests.changes.support.oracle) through
reordering across runs, duplicates, deletes followed by older updates, a batch of nothing but
malformed records, and a key whose changes cross a split and a merge, with the two-attribute key
most DynamoDB tables have (partition and sort key); the runs' counts say what each change did,
and their OpenLineage events (valid against the spec's schemas) the records each read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from tests.changes.support import Sent, dynamodb_change, oracle, put_changes, shuffled_history, table_state
from tests.openlineage.support import events, file_transport
from tests.output.support import output_args, read_rows, sink_of
from tests.scenarios.test_run_formats import run_cli
from tests.streams import StreamFactory, merge, open_shards, split

KINDS = [("delta", "s3"), ("iceberg", "local")]


@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_dynamodb_changes_reordered_duplicated_and_resharded_end_in_the_oracles_state(
    format: str,
    where: str,
    kinesis: Any,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = streams.create(shards=2)
    history = shuffled_history(40, 4)
    third = len(history) // 3
    late = dynamodb_change("item-late", 1_764_000_050_000, 7)
    deleted = dynamodb_change("item-late", 1_764_000_090_000, None)
    output = output_args(format, where, tmp_path, monkeypatch)
    run = ("run", "--stream", name, *output, "--changes", "dynamodb", "--read-limits", "none", "--json")
    sink = sink_of(output, app=f"kinesis-batch-{name}", stream=name)
    lineage = tmp_path / "lineage.jsonl"  # and every run's OpenLineage events, valid
    for key, value in file_transport(lineage).items():
        monkeypatch.setenv(key, value)

    put_changes(kinesis, name, [*history[:third], deleted])
    code, out, err = run_cli(capsys, spark, *run)
    assert code == 0, err
    assert table_state(read_rows(sink)) == oracle([*history[:third], deleted])

    malformed = [Sent(f"bad-{i}", 0, None, b'{"eventName": "MODIFY", "dynamodb": {"Keys": {}}}') for i in range(3)]
    put_changes(kinesis, name, malformed)  # a whole batch of them: published, the checkpoints move
    code, out, err = run_cli(capsys, spark, *run)
    assert code == 0, err
    report = json.loads(out)
    assert (report["published"], report["records"], report["dead_letters"]) == (True, 3, 3), report
    assert table_state(read_rows(sink)) == oracle([*history[:third], deleted])

    first, _ = open_shards(kinesis, name)
    split(kinesis, name, first)  # the next changes of its keys go to its children
    put_changes(kinesis, name, [*history[third : 2 * third], late])  # older than the delete: never a row
    code, out, err = run_cli(capsys, spark, *run)
    assert code == 0, err
    counts = json.loads(out)["changes"]
    assert counts["ignored"] >= 1, counts

    lower, upper = sorted(open_shards(kinesis, name), key=lambda s: int(s.starting_hash_key))[:2]
    merge(kinesis, name, lower, upper)
    put_changes(kinesis, name, history[2 * third :])
    code, out, err = run_cli(capsys, spark, *run)
    assert code == 0, err
    everything = [*history, late, deleted]
    assert table_state(read_rows(sink)) == oracle(everything)

    code, out, err = run_cli(capsys, spark, "history", "--stream", name, "--runs", "--json")
    assert code == 0, err
    runs = json.loads(out)
    totals: dict[str, int] = {}
    for each in runs:
        for kind, count in each.get("changes", {}).items():
            totals[kind] = totals.get(kind, 0) + count
    assert sum(totals.values()) == len(everything), totals  # every change counted once, as what it did
    assert totals["expired"] >= 1 and totals["duplicates"] >= 1 and totals["ignored"] >= 1, totals
    assert totals["inserted"] + totals["updated"] >= len(oracle(everything)), totals
    sent = events(lineage)
    assert [e["eventType"] for e in sent] == ["START", "COMPLETE"] * 4
    read = [e["inputs"][0]["inputFacets"]["inputStatistics"]["rowCount"] for e in sent[1::2]]
    assert sum(read) == len(everything) + len(malformed)  # the stream's records, each read once


def test_upsert_orders_by_the_sequence_field_and_deletes_when_the_field_says(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = streams.create(shards=2)
    events = [
        {"id": 1, "v": "new", "at": "2026-11-25T10:00:02Z", "deleted": False},
        {"id": 1, "v": "old", "at": "2026-11-25T10:00:01Z", "deleted": False},  # later in Kinesis, older in time
        {"id": 2, "v": "gone", "at": "2026-11-25T10:00:01Z", "deleted": False},
        {"id": 2, "v": "gone", "at": "2026-11-25T10:00:03Z", "deleted": True},
        {"id": 3, "v": "kept", "at": "2026-11-25T10:00:01Z", "deleted": False},
        {"id": None, "v": "no key", "at": "2026-11-25T10:00:01Z", "deleted": False},
        {"id": 4, "v": "no time", "at": None, "deleted": False},
    ]
    for event in events:
        kinesis.put_record(StreamName=name, Data=json.dumps(event).encode(), PartitionKey=str(event["id"]))
    table = str(tmp_path / "current")
    code, out, err = run_cli(
        capsys, spark, "run", "--stream", name, "--format", "delta", "--output", table, "--decode", "json",
        "--changes", "upsert", "--key", "id", "--sequence-by", "at", "--delete-when", "deleted=true",
        "--read-limits", "none", "--json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    rows = DeltaTable(table).to_pyarrow_table().to_pydict()
    assert sorted(zip(rows["id"], rows["v"], strict=True)) == [(1, "new"), (3, "kept")]
    assert report["dead_letters"] == 2 and report["changes"]["deleted"] == 1, report
    dead = DeltaTable(table + "_dead_letter").to_pyarrow_table().to_pydict()
    assert sorted(reason.split(":")[0] for reason in dead["reason"]) == ["no key", "unparseable sequence"]


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        ((), ("--changes", "upsert", "--key", "id"), "holds events appended by runs without --changes"),
        (("--changes", "upsert", "--key", "id"), ("--changes", "upsert", "--key", "v"), "is keyed by id, not v"),
        (("--changes", "upsert", "--key", "id"), (), "is a table of current state"),
    ],
    ids=["changes-into-appended", "another-key", "append-into-current-state"],
)
def test_a_table_of_the_other_kind_or_key_is_refused_in_one_line_before_a_lease(
    first: tuple[str, ...],
    second: tuple[str, ...],
    message: str,
    kinesis: Any,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = streams.create(shards=1)
    kinesis.put_record(StreamName=name, Data=b'{"id": 1, "v": "a"}', PartitionKey="1")
    base = ("run", "--stream", name, "--format", "delta", "--output", str(tmp_path / "t"), "--decode", "json")
    code, _, err = run_cli(capsys, spark, *base, *first, "--read-limits", "none")
    assert code == 0, err
    kinesis.put_record(StreamName=name, Data=b'{"id": 2, "v": "b"}', PartitionKey="2")
    code, _, err = run_cli(capsys, spark, *base, *second, "--read-limits", "none")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
