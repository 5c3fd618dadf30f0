"""Partitioned outputs, for every format: a new table's layout (day of arrival unless asked
otherwise), each format's own form of it (Iceberg's partition spec, Delta's partition columns,
parquet's hive folders), the partition values readers see, and an existing table keeping its
layout."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch import InvalidStateError
from kinesis_batch.columns import METADATA, decoded
from kinesis_batch.output import Sink
from kinesis_batch.spark.files import TaskFiles
from kinesis_batch.storage.layout import DEFAULT, PartitionBy
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile
from tests.output.support import ARRIVED, commit_record, output_args, read_rows, sink_of, stage

pytestmark = pytest.mark.contract("tables", why="each format's publish and read-back with these table libraries")

KINDS = [("parquet", "local"), ("delta", "local"), ("delta", "s3"), ("iceberg", "local"), ("iceberg", "s3")]
IDS = [f"{format}-{where}" for format, where in KINDS]


@pytest.fixture(params=KINDS, ids=IDS)
def args(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    format, where = request.param
    return output_args(format, where, tmp_path, monkeypatch)


def partition_spec(sink: Sink) -> list[str]:
    """The format's own statement of the layout."""
    if sink.format == "iceberg":
        table = sink.catalog.load_table(sink.identifier)  # type: ignore[attr-defined]
        schema = table.schema()
        return [f"{field.transform}({schema.find_column_name(field.source_id)})" for field in table.spec().fields]
    if sink.format == "delta":
        return list(sink._load().metadata().partition_columns)  # type: ignore[attr-defined]
    return [(Path(sink.uri) / "_partition_by").read_text()]


def test_a_new_table_is_partitioned_by_day_of_arrival_in_its_formats_own_way(args: tuple[str, ...]) -> None:
    sink = sink_of(args)
    sink.prepare()
    assert sink.partitioning() == DEFAULT
    assert partition_spec(sink) == {"iceberg": ["day(approximate_arrival_timestamp)"], "delta": ["arrival_day"]}.get(
        sink.format, ["day"]
    )
    record = commit_record("b-1")
    files = stage(sink, record)
    assert {file.partition for file in files} == {"2026-11-22"}
    assert all(file.name.startswith("arrival_day=2026-11-22/") for file in files), "hive folders, for any reader"
    assert sink.publish(record, files)

    rows = read_rows(sink)
    assert len(rows["data"]) == 6
    if sink.format != "iceberg":  # Delta fills its derived column from the log, parquet from the folder
        assert set(rows["arrival_day"]) == ({date(2026, 11, 22)} if sink.format == "delta" else {"2026-11-22"})


def test_partition_by_none_makes_an_unpartitioned_table_and_it_stays_so(args: tuple[str, ...]) -> None:
    sink = sink_of(args)
    sink.prepare(partition_by="none")
    assert sink.partitioning() is None and partition_spec(sink) in ([], ["none"])
    files = stage(sink, commit_record("b-1"))
    assert all("/" not in file.name for file in files)
    sink.prepare()  # a later run without --partition-by: the table's own layout
    assert sink_of(args).partitioning() is None


@pytest.mark.parametrize(("made", "asked"), [("day", "hour"), ("none", "day"), ("hour", "none")])
def test_asking_an_existing_table_for_another_layout_is_refused_in_one_line(
    args: tuple[str, ...], made: str, asked: str
) -> None:
    sink_of(args).prepare(partition_by=made)
    with pytest.raises(InvalidStateError, match=f"--partition-by {asked}: .* is partitioned by {made}; a table keeps"):
        sink_of(args).prepare(partition_by=asked)
    sink_of(args).prepare(partition_by=made)  # the same one again is fine


def test_an_hour_partition_splits_one_tasks_rows_by_hour(args: tuple[str, ...]) -> None:
    sink = sink_of(args)
    sink.prepare(partition_by="hour")
    record = commit_record("b-1", ("shardId-0",))
    files = stage(sink, record, arrival=datetime(2026, 11, 22, 5, 30, tzinfo=UTC))
    files += stage_more(sink, record, arrival=datetime(2026, 11, 22, 6, 1, tzinfo=UTC))
    assert sorted(file.partition for file in files) == ["2026-11-22-05", "2026-11-22-06"]
    assert sink.publish(record, files)
    assert len(read_rows(sink)["data"]) == 4


def stage_more(sink: Sink, record: CommitRecord, *, arrival: datetime) -> list[StagedFile]:
    """Another task's file of the same batch (``stage`` writes the plan manifest once)."""
    from kinesis_batch.columns import RAW, ROW_SCHEMA

    schema = ROW_SCHEMA if sink.format == "parquet" else RAW.schema(batch_column=True)
    columns: dict[str, list[Any]] = {
        "shard_id": ["shardId-9"],
        "sequence_number": [str(10**60)],
        "sub_sequence_number": [0],
        "partition_key": ["k"],
        "data": [b"later"],
        "approximate_arrival_timestamp": [arrival],
        "lineage_depth": [0],
    }
    if sink.format != "parquet":
        columns["batch_id"] = [record.batch_id]
    with TaskFiles(sink.data(record.batch_id), "shardId-9", sink.file_layout(1 << 20)) as task:
        task.write(pa.RecordBatch.from_pydict(columns, schema=schema))
    return task.files


FIELDS = pa.schema([("country", pa.string()), ("event_time", pa.timestamp("us", "UTC")), ("n", pa.int64())])


def decoded_rows(batch_id: str, *, batch_column: bool) -> pa.RecordBatch:
    columns: dict[str, Any] = {
        "shard_id": ["shardId-0"] * 3,
        "sequence_number": [str(10**55 + i) for i in range(3)],
        "sub_sequence_number": [0] * 3,
        "record_index": [0] * 3,
        "partition_key": ["k"] * 3,
        "approximate_arrival_timestamp": [ARRIVED] * 3,
        "lineage_depth": [0] * 3,
        **({"batch_id": [batch_id] * 3} if batch_column else {}),
        "country": ["DE", "FR", None],
        "event_time": [datetime(2026, 11, d, tzinfo=UTC) for d in (1, 2, 2)],
        "n": [1, 2, 3],
    }
    schema = pa.schema([*METADATA, *([pa.field("batch_id", pa.string())] if batch_column else []), *FIELDS])
    return pa.RecordBatch.from_pydict(columns, schema=schema)


@pytest.mark.parametrize(
    ("form", "values"), [("identity(country)", ["DE", "FR", None]), ("day(event_time)", ["2026-11-01", "2026-11-02"])]
)
def test_a_decoded_table_partitions_by_a_field(args: tuple[str, ...], form: str, values: list[str | None]) -> None:
    sink = sink_of(args)
    sink.prepare(decoded(FIELDS), partition_by=form)
    assert sink.partitioning() == PartitionBy.parse(form)
    record = commit_record("b-1", ("shardId-0",))
    sink.data("b-1").make_dirs()
    layout = sink.file_layout(1 << 20)
    with TaskFiles(sink.data("b-1"), "shardId-0", layout, schemas=True) as task:
        task.write(decoded_rows("b-1", batch_column=sink.writes_batch_column()))
    sink.write_manifest("b-1", {})
    assert {file.partition for file in task.files} == set(values)
    assert sink.publish(record, task.files)

    rows = read_rows(sink)
    assert sorted(rows["n"]) == [1, 2, 3]
    assert sorted(rows["country"], key=str) == sorted(["DE", "FR", None], key=str), "an identity value comes back"


def test_a_field_the_table_cannot_have_yet_is_refused_naming_the_schema_flag(args: tuple[str, ...]) -> None:
    with pytest.raises(Exception, match="has no field country \\(declare it with --schema"):
        sink_of(args).prepare(decoded(), partition_by="identity(country)")
