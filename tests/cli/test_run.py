"""`kinesis-batch run` end to end: the command line's main(argv) on the worker's local Spark, real
emulators, output read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kinesis_batch import Lineage, list_shards
from tests.runs import assert_exactly_once, assert_per_key_order, cli, data_of, diamond_stream, read_output
from tests.streams import StreamFactory, put

# kinesis-local takes ~280 puts/s: a small history there, a larger one on kinesalite.
PER_PHASE = {"kinesalite": 1500, "kinesis-local": 60}


@pytest.mark.parametrize("emulator", ["kinesalite", "kinesis-local"], indirect=True)
def test_run_reads_every_record_once_across_splits_and_merges_then_only_new_data(
    emulator: str,
    kinesis,
    streams: StreamFactory,
    spark,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, PER_PHASE[emulator])
    output = tmp_path / "out"

    first = cli("run", "--stream", name, "--output", str(output), "--json", spark=spark)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["published"] and report["records"] == len(sent)

    rows = read_output(output)
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
    lineage = Lineage.build(list_shards(kinesis, name))
    depths = {shard: depth for shard, depth in zip(rows["shard_id"], rows["lineage_depth"], strict=True)}
    assert depths == {shard: lineage.depth(shard) for shard in depths}
    assert max(depths.values()) == 2  # the diamond's merge child

    more = put(kinesis, name, PER_PHASE[emulator] // 2, start=len(sent))
    second = cli("run", "--stream", name, "--output", str(output), "--json", spark=spark)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["records"] == len(more)
    rows = read_output(output)
    assert_exactly_once(rows, sent + more)
    assert_per_key_order(rows)

    third = cli("run", "--stream", name, "--output", str(output), "--json", spark=spark)
    assert third.returncode == 0, third.stderr
    assert json.loads(third.stdout)["published"] is False
    assert len(data_of(read_output(output))) == len(sent + more)


def test_status_json_lists_every_shard_with_lineage_checkpoint_and_lease(
    kinesis,
    streams: StreamFactory,
    spark,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 50)
    run = cli("run", "--stream", name, "--output", str(tmp_path / "out"), spark=spark)
    assert run.returncode == 0, run.stderr

    status = cli("status", "--stream", name, "--json")
    assert status.returncode == 0, status.stderr
    rows = json.loads(status.stdout)
    shards = list_shards(kinesis, name)
    assert {r["shard_id"] for r in rows} == {s.shard_id for s in shards}
    for row in rows:
        assert {"shard_id", "parent_shard_ids", "closed", "checkpoint", "lease_owner", "pending_batch"} <= set(row)
        assert row["lease_owner"] is None and row["pending_batch"] is None  # released, nothing pending
        if row["closed"]:
            assert row["checkpoint"] == "SHARD_END", (row, run.stderr[-3000:])
        else:
            assert row["checkpoint"].isdigit(), row

    assert all(row["lag_seconds"] == 0 and row["oldest_unread_at"] is None for row in rows)  # caught up
    assert {row["retention_risk"] for row in rows} == {"ok"}

    table = cli("status", "--stream", name)
    assert table.returncode == 0 and "SHARD_END" in table.stdout
    assert "retention 24 h" in table.stdout and "lag 0s" in table.stdout

    history = cli("history", "--stream", name, "--json")
    assert history.returncode == 0, history.stderr
    assert {h["shard_id"] for h in json.loads(history.stdout)} == {s.shard_id for s in shards}
    runs = cli("history", "--stream", name, "--runs")
    assert runs.returncode == 0, runs.stderr
    (line,) = runs.stdout.splitlines()  # one run, on every shard, with the lag it began with
    assert f" {len(sent)} records" in line and f" {len(shards)} shards" in line and "behind" in line, line
    both = cli("history", "--stream", name, "--runs", "--run", "x")
    assert both.returncode == 2 and both.stderr.count("\n") == 1, both.stderr

    put(kinesis, name, 30, start=10_000)
    behind = json.loads(cli("status", "--stream", name, "--json").stdout)
    unread = [row for row in behind if row["oldest_unread_at"]]
    assert unread and all(not row["closed"] for row in unread)  # new records land in open shards only
