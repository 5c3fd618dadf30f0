"""``kinesis-batch backfill`` in process (the shared Spark session) against the local endpoints:
a backfill from a history checkpoint rereads that run into its own output and leaves the main
checkpoints; each bad input is one line, exit 2, and creates nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import LeaseStore
from kinesis_batch.cli import main
from kinesis_batch.parsers import default_table
from tests.runs import assert_exactly_once, read_output
from tests.streams import StreamFactory, put


def kinesis_batch(capsys: pytest.CaptureFixture[str], spark: Any, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--read-limits", "none"], spark=lambda: spark)
    said = capsys.readouterr()
    return code, said.out, said.err


def checkpoints(dynamodb: Any, name: str) -> dict[str, str]:
    return {lease.lease_key: str(lease.checkpoint) for lease in LeaseStore(dynamodb, default_table(name)).list_leases()}


def test_a_backfill_from_a_history_checkpoint_rereads_that_run_into_its_own_output_and_leaves_the_main_checkpoints(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    main_output, backfill_output = tmp_path / "main", tmp_path / "backfill"
    first = put(kinesis, name, 40)
    assert kinesis_batch(capsys, spark, "run", "--stream", name, "--output", str(main_output))[0] == 0
    second = put(kinesis, name, 30, start=len(first))
    code, out, _ = kinesis_batch(capsys, spark, "run", "--stream", name, "--output", str(main_output), "--json")
    assert code == 0
    second_run = json.loads(out)["run_id"]
    before = checkpoints(dynamodb, name)

    code, out, err = kinesis_batch(
        capsys, spark, "backfill", "--stream", name, "--output", str(backfill_output),
        "--start", f"run={second_run}", "--backfill-id", "replay-1",
    )  # fmt: skip

    assert code == 0, err
    assert out.startswith("backfill replay-1: 30 records from 2 shards"), out
    assert f"the main checkpoints in {default_table(name)} did not move" in err
    assert_exactly_once(read_output(backfill_output), second)
    assert_exactly_once(read_output(main_output), first + second)
    assert checkpoints(dynamodb, name) == before
    backfill_table = f"{default_table(name)}-backfill-replay-1"
    assert all(lease.lease_owner is None for lease in LeaseStore(dynamodb, backfill_table).list_leases())


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--start", "yesterday"), "start: 'yesterday' is not trim_horizon"),
        (("--start", "run=no-such-run"), "start run=no-such-run: no run has committed on this stream's main lease"),
        (("--shards", "shardId-000000000009"), "shards: shardId-000000000009 are not shards of this stream"),
        (("--start", "after_sequence=5"), "exactly one shard"),
        (("--end", "next tuesday"), "--end"),
        (("--format", "iceberg"), "an Iceberg table is named NAMESPACE.TABLE"),
        (("--move-main-checkpoints", "--start", "trim_horizon"), "do not apply with --move-main-checkpoints"),
        (("--backfill-id", "../up"), "--backfill-id: '../up' is not a run id"),
    ],
    ids=["start", "unknown-run", "unknown-shard", "sequence-of-two-shards", "end", "format", "move-main", "id"],
)
def test_a_bad_backfill_input_is_one_line_exit_2_and_creates_nothing(
    args: tuple[str, ...], says: str, kinesis: Any, dynamodb: Any, streams: StreamFactory, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    output = tmp_path / "backfill"
    code, _, err = kinesis_batch(capsys, None, "backfill", "--stream", name, "--output", str(output), *args)

    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("kinesis-batch: error: "), err
    assert says in err, err
    assert [table for table in dynamodb.list_tables()["TableNames"] if name in table and "backfill" in table] == []
    assert not output.exists()


def test_a_routed_backfill_rereads_the_stream_into_a_template_of_its_own_one_table_per_kind(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    kinds = ["click", "view"]
    put(kinesis, name, 20, payload=lambda i: json.dumps({"n": i, "type": kinds[i % 2]}).encode())
    routed = ("--decode", "json", "--route-by", "type")
    main_output, backfill_output = tmp_path / "main" / "{route}", tmp_path / "backfill" / "{route}"
    assert kinesis_batch(capsys, spark, "run", "--stream", name, "--output", str(main_output), *routed)[0] == 0
    before = checkpoints(dynamodb, name)

    code, out, err = kinesis_batch(
        capsys, spark, "backfill", "--stream", name, "--output", str(backfill_output), *routed,
        "--start", "trim_horizon", "--backfill-id", "replay-routed",
    )  # fmt: skip

    assert code == 0, err
    assert out.startswith("backfill replay-routed: 20 records (20 rows in 2 tables: click 10, view 10;"), out
    for index, kind in enumerate(kinds):
        rows = read_output(tmp_path / "backfill" / kind)
        assert sorted(rows["n"]) == list(range(index, 20, 2)), kind
    assert checkpoints(dynamodb, name) == before
