"""No batch wedges a stream of changes: a batch whose every record is a dead letter (a typo in
--key, a --sequence-by field no record has, one malformed record in a quiet hour) commits its
dead letters and moves the checkpoints like any other, releases its leases, and never gives a
new table a key no record had; the corrected settings then land the next records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from kinesis_batch.output.changes import KEY_PROPERTY
from tests.scenarios.test_run_formats import run_cli
from tests.streams import StreamFactory


def test_batches_of_only_dead_letters_commit_them_and_the_corrected_settings_land_the_next(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = streams.create(shards=1)
    table = str(tmp_path / "current")
    base = ("run", "--stream", name, "--format", "delta", "--output", table, "--decode", "json")
    base += ("--changes", "upsert", "--read-limits", "none", "--json")

    def put(*bodies: bytes) -> None:
        for body in bodies:
            kinesis.put_record(StreamName=name, Data=body, PartitionKey="p")

    def run(*more: str) -> dict[str, Any]:
        code, out, err = run_cli(capsys, spark, *base, *more)
        assert code == 0, err
        report: dict[str, Any] = json.loads(out)
        assert report["published"] and report["leased_elsewhere"] == {}, report
        return report

    def unheld() -> None:
        code, out, err = run_cli(capsys, spark, "status", "--stream", name, "--json")
        assert code == 0, err
        shards = json.loads(out)
        assert [(s["lease_owner"], s["pending_batch"]) for s in shards] == [(None, None)], "left held or pending"

    put(b'{"id": 1, "v": 1}', b'{"id": 2, "v": 1}')
    typo = run("--key", "user_id")
    assert (typo["rows"], typo["dead_letters"]) == (0, 2), typo
    unheld()
    assert KEY_PROPERTY not in DeltaTable(table).metadata().configuration, "keyed by a field no record had"

    put(b'{"id": 1, "v": 2}')
    no_order = run("--key", "id", "--sequence-by", "version")  # no record has it
    assert (no_order["rows"], no_order["dead_letters"]) == (0, 1), no_order
    unheld()

    put(b'{"id": 1, "v": 3}', b'{"id": 2, "v": 3}')
    landed = run("--key", "id", "--sequence-by", "v")
    assert landed["rows"] == 2 and landed["changes"]["inserted"] == 2, landed
    assert DeltaTable(table).metadata().configuration[KEY_PROPERTY] == "id"
    batch = landed["batch_id"]
    left = [str(p) for root in (table, table + "_dead_letter") for p in Path(root).rglob("*") if batch in str(p)]
    assert left == [], "the batch's staged changes or empty bookkeeping were left behind"

    put(b'{"id": 1, "v": ')  # a quiet hour's one malformed record
    quiet = run("--key", "id", "--sequence-by", "v")
    assert (quiet["rows"], quiet["dead_letters"]) == (0, 1), quiet
    unheld()

    put(b'{"id": 2, "v": 4}')
    run("--key", "id", "--sequence-by", "v")
    rows = DeltaTable(table).to_pyarrow_table().to_pydict()
    assert sorted(zip(rows["id"], rows["v"], strict=True)) == [(1, 3), (2, 4)]
    dead = DeltaTable(table + "_dead_letter").to_pyarrow_table()
    assert dead.num_rows == 4

    code, out, err = run_cli(capsys, spark, "history", "--stream", name, "--runs")  # the text form too
    assert code == 0 and "changes: 2 inserted" in out, err
    code, out, err = run_cli(capsys, spark, "status", "--stream", name, "--format", "delta", "--output", table)
    assert code == 0 and "1 records, 1 changes (1 updated), 0 dead letters" in out, (out, err)
