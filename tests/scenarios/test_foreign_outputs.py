"""An output is one format's: every format's ``run`` and ``maintain``, pointed at another format's
table, at kinesis-batch's Parquet batches, or at a folder of somebody else's files, is refused in
one line with exit 2, having written nothing there (the folder is listed before and after) and
taken no lease (the lease table is never made)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch.output.iceberg import IcebergSink
from kinesis_batch.output.parquet import ParquetSink
from kinesis_batch.parsers import default_table
from tests.cli.test_maintain import run_cli
from tests.output.support import output_args, sink_of
from tests.streams import StreamFactory

TARGETS = ("delta table", "iceberg table", "kinesis-batch parquet", "foreign folder")
#: What each format may not write into (its own kind of table it may).
REFUSED = [
    (format, target)
    for format in ("parquet", "delta", "iceberg")
    for target in TARGETS
    if not target.startswith(format) and not (format == "parquet" and target == "kinesis-batch parquet")
]


def make_target(target: str, where: Path, tmp_path: Path) -> None:
    """What ``target`` names, made at ``where`` as its own tools make it."""
    if target == "delta table":
        from deltalake import write_deltalake

        write_deltalake(str(where), pa.table({"a": [1, 2]}))
    elif target == "iceberg table":
        from pyiceberg.catalog.sql import SqlCatalog

        catalog = SqlCatalog("theirs", uri=f"sqlite:///{tmp_path}/theirs.db", warehouse=f"file://{tmp_path}/w")
        catalog.create_namespace_if_not_exists("their")
        table = catalog.create_table("their.table", schema=pa.schema([("a", pa.int64())]), location=str(where))
        table.append(pa.table({"a": [1, 2]}))
    elif target == "kinesis-batch parquet":
        ParquetSink(where).prepare()  # what a first run leaves before its first batch is published
    else:
        (where / "2026").mkdir(parents=True)
        (where / "report.csv").write_text("a,b\n1,2\n")
        (where / "2026" / "events.json").write_text("{}\n")


def listed(where: Path) -> Callable[[], list[tuple[str, int, int]]]:
    return lambda: sorted((str(p.relative_to(where)), p.stat().st_size, p.stat().st_mtime_ns) for p in where.rglob("*"))


def pointed_at(
    format: str, target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[str, ...], Path]:
    """A ``format`` output whose location holds ``target``: (its arguments, that location)."""
    output = output_args(format, "local", tmp_path, monkeypatch)
    if format == "iceberg":  # a new table's location: where its catalog would make it
        sink = sink_of(output)
        assert isinstance(sink, IcebergSink)
        where = Path(str(sink._new_location()).removeprefix("file://"))
    else:
        where = Path(output[3])
    make_target(target, where, tmp_path)
    return output, where


@pytest.mark.parametrize(("format", "target"), REFUSED, ids=[f"{f}-into-{t.replace(' ', '-')}" for f, t in REFUSED])
def test_a_run_or_maintain_of_one_format_never_writes_where_another_table_or_foreign_files_are(
    format: str, target: str, kinesis: Any, dynamodb: Any, streams: StreamFactory, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=1)
    output, where = pointed_at(format, target, tmp_path, monkeypatch)
    state = listed(where)
    before = state()
    assert before, "the target holds something"

    for command in (("run", "--stream", name, *output), ("maintain", *output)):
        code, out, err = run_cli(capsys, *command)
        assert (code, out) == (2, ""), err
        assert len(err.splitlines()) == 1 and " holds " in err, err
        assert "none of kinesis-batch's" in err if target == "foreign folder" else target.split()[0] in err.lower()
        assert state() == before, f"{command[0]} wrote into {where}"
    assert default_table(name) not in dynamodb.list_tables()["TableNames"], "a lease table was made"


@pytest.mark.parametrize("format", ["parquet", "delta", "iceberg"])
def test_each_format_writes_its_own_kind_of_table_and_an_empty_folder(
    format: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = {"parquet": "kinesis-batch parquet", "delta": "delta table", "iceberg": "iceberg table"}[format]
    output, where = pointed_at(format, own, tmp_path, monkeypatch)
    if format != "iceberg":  # an Iceberg output names a catalog's table: its location is the catalog's
        sink_of(output).check_place()
    empty = output_args(format, "local", tmp_path, monkeypatch)
    if format != "iceberg":
        Path(empty[3]).mkdir(parents=True)
    sink_of(empty).check_place()
    assert where.exists()
