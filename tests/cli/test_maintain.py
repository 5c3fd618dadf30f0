"""`kinesis-batch maintain` and the layout flags through the command line (``cli.main``
in-process): a maintenance report in lines or JSON, ``status --output`` showing the output's
files and last maintenance, and each mistake as one line with exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.cli import main
from tests.output.support import commit_record, output_args, sink_of, stage
from tests.streams import StreamFactory, put

EXIT_USAGE = 2


def run_cli(capsys: pytest.CaptureFixture[str], *args: str, spark: Any = None) -> tuple[int, str, str]:
    code = main(list(args), spark=(lambda: spark) if spark is not None else None)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("format", ["parquet", "delta", "iceberg"])
def test_maintain_compacts_an_output_and_says_what_it_did(
    format: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    output = output_args(format, "local", tmp_path, monkeypatch)
    sink = sink_of(output)
    sink.prepare()
    for number in range(3):
        record = commit_record(f"b-{number}")
        sink.publish(record, stage(sink, record))

    code, out, err = run_cli(capsys, "maintain", *output)
    assert code == 0, err
    assert out.splitlines()[1].startswith("maintained ") and "compacted " in out and "orphan files" in out

    code, out, err = run_cli(capsys, "maintain", *output, "--json", "--target-file-mb", "64", "--retain-hours", "0")
    assert code == 0, err
    report = json.loads(out)
    assert report["format"] == format and report["after"]["files"] == (3 if format == "parquet" else 1)
    assert set(report) >= {"maintenance_id", "compacted", "versions_expired", "orphans_removed", "seconds"}


def test_status_shows_the_outputs_files_and_its_last_maintenance(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = streams.create(shards=2)
    put(kinesis, name, 30)
    output = ("--format", "parquet", "--output", str(tmp_path / "out"))
    for _ in range(2):
        assert run_cli(capsys, "run", "--stream", name, *output, "--read-limits", "none", spark=spark)[0] == 0
        put(kinesis, name, 10)

    code, out, _ = run_cli(capsys, "status", "--stream", name, *output, "--small-file-mb", "1")
    assert code == 0
    assert "never maintained (kinesis-batch maintain)" in out

    assert run_cli(capsys, "maintain", *output)[0] == 0
    code, out, _ = run_cli(capsys, "status", "--stream", name, *output)
    assert code == 0 and "last maintained " in out and " files in 1 partitions" in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("maintain", "--output", "/nonexistent/kinesis-out"), "no output at /nonexistent/kinesis-out"),
        (("maintain", "--format", "delta", "--output", "/nonexistent/t"), "no Delta table at /nonexistent/t"),
        pytest.param(
            ("maintain", "--format", "delta", "--output", "s3://no-such-bucket-kb/t"),
            "--output s3://no-such-bucket-kb/t: bucket no-such-bucket-kb does not exist",
            marks=pytest.mark.processes,  # moto's S3
        ),
        pytest.param(  # no --format: an s3:// path can only be a Delta table
            ("maintain", "--output", "s3://no-such-bucket-kb/t"),
            "--output s3://no-such-bucket-kb/t: bucket no-such-bucket-kb does not exist",
            marks=pytest.mark.processes,
        ),
        (("status", "--stream", "s", "--format", "delta"), "--format and --catalog need --output"),
        (("maintain", "--output", "/tmp/x", "--retain-hours", "-1"), "--retain-hours: -1 is not in 0..87600"),
        (("maintain", "--output", "/tmp/x", "--target-file-mb", "0"), "--target-file-mb: 0 is not in 1..4096"),
        (("run", "--stream", "s", "--output", "/tmp/x", "--partition-by", "week"), "--partition-by 'week': use"),
        (
            ("run", "--stream", "s", "--output", "/tmp/x", "--target-file-mb", "5000"),
            "--target-file-mb: 5000 is not in 1..4096",
        ),
    ],
)
def test_each_maintenance_or_layout_mistake_is_one_line_and_exit_2(
    args: tuple[str, ...], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, *args)
    assert (code, out) == (EXIT_USAGE, "")
    assert len(err.splitlines()) == 1 and says in err, err


def foreign_output(format: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[str, ...], Any]:
    """An output kinesis-batch did not make: somebody's folder, Delta table or Iceberg table;
    and what it is now (to compare after)."""
    import pyarrow as pa

    output = output_args(format, "local", tmp_path, monkeypatch)
    where = output[3]
    if format == "parquet":
        theirs = Path(where, "_discarded", "old.txt")
        theirs.parent.mkdir(parents=True)
        theirs.write_text("theirs")
        os.utime(theirs, (0, 0))  # old: what maintenance would call a leftover of ours
        return output, lambda: sorted(str(path.relative_to(where)) for path in Path(where).rglob("*"))
    if format == "delta":
        from deltalake import DeltaTable, write_deltalake

        for value in (1, 2):
            write_deltalake(where, pa.table({"a": [value]}), mode="append")
        return output, lambda: (DeltaTable(where).version(), DeltaTable(where).metadata().configuration)
    sink = sink_of(output)
    sink.catalog.create_namespace_if_not_exists("lake")  # type: ignore[attr-defined]
    table = sink.catalog.create_table(where, schema=pa.schema([("a", pa.int64())]))  # type: ignore[attr-defined]
    for value in (1, 2):
        table.append(pa.table({"a": [value]}))
    load = sink.catalog.load_table  # type: ignore[attr-defined]
    return output, lambda: (len(load(where).snapshots()), load(where).properties)


@pytest.mark.parametrize("format", ["parquet", "delta", "iceberg"])
def test_maintain_of_an_output_kinesis_batch_did_not_make_touches_nothing_and_says_so(
    format: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    output, state = foreign_output(format, tmp_path, monkeypatch)
    before = state()

    code, out, err = run_cli(capsys, "maintain", *output, "--retain-hours", "0")

    assert (code, out) == (EXIT_USAGE, "")
    # A folder of somebody's files is refused for what it holds; a table, for having no run's mark.
    says = "none of kinesis-batch's" if format == "parquet" else "is not an output of kinesis-batch"
    assert len(err.splitlines()) == 1 and says in err, err
    assert state() == before, "a foreign output was changed"


def test_a_partition_by_an_existing_table_does_not_have_is_one_line_and_exit_2(
    kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=1)
    output = output_args("delta", "local", tmp_path, monkeypatch)
    sink_of(output).prepare(partition_by="day")

    code, out, err = run_cli(capsys, "run", "--stream", name, *output, "--partition-by", "hour")

    assert (code, out) == (EXIT_USAGE, "")
    assert err.splitlines() == [
        f"kinesis-batch: error: --partition-by hour: Delta table {output[3]} is partitioned by day; a table keeps its "
        "layout (omit --partition-by, or write to a new table)"
    ]
