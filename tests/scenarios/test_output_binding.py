"""A consumer knows its output: the lease table records where its batches are published; a run
naming another output is refused in one line naming both (nothing written there); ``--move-output``
moves it, recorded in the history with the checkpoints it starts from and shown by ``status``; a
table made before outputs were recorded adopts its output with one line; backfills are
unaffected (their own table binds to their own output; one moving the main checkpoints leaves the
main table's output as it is)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.output import Output
from kinesis_batch.ownership.table_mark import read_mark, write_mark
from kinesis_batch.parsers import default_table
from tests.cli.test_maintain import run_cli
from tests.runs import assert_exactly_once, read_output
from tests.streams import StreamFactory, put


def uri(path: Path) -> str:
    return Output("parquet", str(path)).asset_uri


def test_a_second_output_is_refused_and_moved_only_on_purpose(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    first, second = tmp_path / "first", tmp_path / "second"
    sent = put(kinesis, name, 40)
    run = ("run", "--stream", name, "--read-limits", "none")
    assert run_cli(capsys, *run, "--output", str(first), spark=spark)[0] == 0
    history = HistoryTable(dynamodb, default_table(name))
    bound = read_mark(history)
    assert bound is not None and bound.output == uri(first)

    more = put(kinesis, name, 10, start=len(sent))
    code, out, err = run_cli(capsys, *run, "--output", str(second), spark=spark)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1, err
    assert f"publishes to {uri(first)}, not {uri(second)}" in err and "--move-output" in err
    assert not second.exists(), "the refused output was written"

    code, _, err = run_cli(capsys, *run, "--output", str(second), "--move-output", spark=spark)
    assert code == 0, err
    assert f"moved the output of lease table {default_table(name)} from {uri(first)} to {uri(second)}" in err
    assert_exactly_once(read_output(first), sent)
    assert_exactly_once(read_output(second), more)  # it starts at the checkpoints
    bound = read_mark(history)
    assert bound is not None and bound.output == uri(second)

    code, out, _ = run_cli(capsys, "status", "--stream", name)
    assert code == 0
    (line,) = [line for line in out.splitlines() if line.startswith("publishes to ")]
    assert line.startswith(f"publishes to {uri(second)}; moved from {uri(first)} at ")
    assert "starting at the checkpoints of 2 shards" in line
    code, out, _ = run_cli(capsys, *run, "--output", str(first), spark=spark)
    assert code == 2, "the old output is now the other one"


def test_a_first_run_that_published_nothing_does_not_bind_its_output_for_good(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The user's first run fails in its read (a record that does not decode, with
    --on-bad-record fail): nothing was published, no checkpoint moved. The corrected run, to the
    output the user meant, is not refused: the first output lacks nothing, and the table is
    bound to the second with one line."""
    name = streams.create(shards=2)
    wrong, meant = tmp_path / "wrong", tmp_path / "meant"
    sent = put(kinesis, name, 30, payload=lambda i: json.dumps({"n": i}).encode())
    kinesis.put_record(StreamName=name, Data=b"not json", PartitionKey="bad")
    decode = ("run", "--stream", name, "--read-limits", "none", "--decode", "json")
    code, _, err = run_cli(capsys, *decode, "--output", str(wrong), "--on-bad-record", "fail", spark=spark)
    assert code == 2, err
    assert not list(wrong.rglob("*.parquet")), "nothing was published"

    code, _, err = run_cli(capsys, *decode, "--output", str(meant), spark=spark)

    assert code == 0, err
    assert f"now publishes its output to {uri(meant)}: nothing was ever published to {uri(wrong)}" in err
    bound = read_mark(HistoryTable(dynamodb, default_table(name)))
    assert bound is not None and bound.output == uri(meant)
    assert sorted(read_output(meant)["n"]) == list(range(len(sent))), "every good record once"
    assert read_output(Path(f"{meant}_dead_letter"))["partition_key"] == ["bad"]


def test_a_lease_table_made_before_outputs_were_recorded_adopts_its_output_with_one_line(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=1)
    output = tmp_path / "out"
    sent = put(kinesis, name, 20)
    run = ("run", "--stream", name, "--read-limits", "none", "--output", str(output))
    assert run_cli(capsys, *run, spark=spark)[0] == 0
    history = HistoryTable(dynamodb, default_table(name))
    bound = read_mark(history)
    assert bound is not None
    old = bound.__class__(**{**bound.__dict__, "output": None, "dead_letter_output": None})
    assert write_mark(history, old, replacing=bound)  # the mark as an install before outputs wrote it

    more = put(kinesis, name, 5, start=len(sent))
    code, _, err = run_cli(capsys, *run, spark=spark)
    assert code == 0, err
    adopted = [line for line in err.splitlines() if "now records its output" in line]
    assert adopted == [
        f"lease table {default_table(name)} now records its output, {uri(output)} (it was made before "
        "kinesis-batch recorded outputs): a run naming another output is refused from now on"
    ]
    assert_exactly_once(read_output(output), sent + more)
    bound = read_mark(history)
    assert bound is not None and bound.output == uri(output)
    code, _, err = run_cli(capsys, *run, spark=spark)
    assert code == 0 and "now records its output" not in err, "adopted once"


def test_backfills_keep_their_own_outputs_and_leave_the_main_tables_alone(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=1)
    main_output = tmp_path / "main"
    sent = put(kinesis, name, 20)
    assert run_cli(capsys, "run", "--stream", name, "--read-limits", "none", "--output", str(main_output),
                   spark=spark)[0] == 0  # fmt: skip
    history = HistoryTable(dynamodb, default_table(name))

    backfill = ("backfill", "--stream", name, "--read-limits", "none")
    code, _, err = run_cli(capsys, *backfill, "--output", str(tmp_path / "replay"), "--backfill-id", "r1", spark=spark)
    assert code == 0, err
    assert_exactly_once(read_output(tmp_path / "replay"), sent)
    own = read_mark(HistoryTable(dynamodb, f"{default_table(name)}-backfill-r1"))
    assert own is not None and own.output == uri(tmp_path / "replay")

    more = put(kinesis, name, 5, start=len(sent))
    code, _, err = run_cli(capsys, *backfill, "--output", str(tmp_path / "ahead"), "--move-main-checkpoints",
                           spark=spark)  # fmt: skip
    assert code == 0, err
    assert_exactly_once(read_output(tmp_path / "ahead"), more)
    bound = read_mark(history)
    assert bound is not None and bound.output == uri(main_output), "the main table's output moved"
