"""A Spark task's files: one per partition value for all its shards, rolled at the target size,
visible only once complete (kinesis_batch.spark.files)."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.routing.routes import HELD_ROUTE, SINGLE
from kinesis_batch.spark.files import RouteFiles, TaskFiles
from kinesis_batch.spark.targets import RouteTargets, Target
from kinesis_batch.storage.layout import DEFAULT, FileLayout, PartitionBy
from kinesis_batch.storage.place import Place

DAY = datetime(2026, 11, 24, 22, tzinfo=UTC)
ARRIVAL = pa.timestamp("us", "UTC")


def rows(shard: str, start: int, count: int, *, hours: int = 0, payload: int = 16) -> pa.RecordBatch:
    """``count`` rows of ``shard``, arriving ``hours`` after 22:00 of 2026-11-24 (so 2 is the next day)."""
    return pa.record_batch(
        {
            "shard_id": [shard] * count,
            "n": list(range(start, start + count)),
            "approximate_arrival_timestamp": pa.array([DAY + timedelta(hours=hours)] * count, ARRIVAL),
            "data": [os.urandom(payload) for _ in range(count)],  # incompressible: sizes are what was written
        }
    )


def parquet_files(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*.parquet"))


def test_the_shards_of_a_task_share_one_file_per_partition_in_its_hive_folder(tmp_path: Path) -> None:
    with TaskFiles(Place(str(tmp_path)), "shardId-1", FileLayout(DEFAULT)) as files:
        files.write(rows("shardId-1", 0, 10, hours=0))
        files.write(rows("shardId-2", 100, 10, hours=1))
        files.write(rows("shardId-1", 10, 10, hours=3))  # the next day
        files.write(rows("shardId-2", 110, 5, hours=0))

    assert {(file.partition, file.rows) for file in files.files} == {("2026-11-24", 25), ("2026-11-25", 10)}
    assert parquet_files(tmp_path) == sorted(file.name for file in files.files)
    for file in files.files:
        folder, name = file.name.split("/")
        assert folder == f"arrival_day={file.partition}" and name.startswith("part-shardId-1-")
    table = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert sorted(table.column("n").to_pylist()) == [*range(20), *range(100, 115)]


def test_an_unpartitioned_task_writes_one_file_at_the_top(tmp_path: Path) -> None:
    with TaskFiles(Place(str(tmp_path)), "s", FileLayout()) as files:
        files.write(rows("s", 0, 5, hours=0))
        files.write(rows("s", 5, 5, hours=3))
    assert [(file.partition, file.rows) for file in files.files] == [(None, 10)]
    assert "/" not in files.files[0].name


def test_a_file_is_rolled_once_it_reaches_the_target_size(tmp_path: Path) -> None:
    target = 64 * 1024
    with TaskFiles(Place(str(tmp_path)), "s", FileLayout(DEFAULT, True, target)) as files:
        for start in range(0, 400, 20):
            files.write(rows("s", start, 20, payload=1024))  # about 20 KiB a write, one partition

    sizes = [path.stat().st_size for path in tmp_path.rglob("*.parquet")]
    assert len(sizes) > 1 and sum(file.rows for file in files.files) == 400
    assert all(size < target + 32 * 1024 for size in sizes), "a file grew past its target by more than a write"
    assert sum(size >= target for size in sizes) >= len(sizes) - 1, "only the last file may be short"


def test_more_partitions_than_may_be_open_finish_the_least_recently_written_first(tmp_path: Path) -> None:
    partition = PartitionBy.parse("identity(shard_id)")
    with TaskFiles(Place(str(tmp_path)), "s", FileLayout(partition, True), max_open=2) as files:
        for shard in ("a", "b", "c"):
            files.write(rows(shard, 0, 3))
        finished_early = {file.partition for file in files.files}
        files.write(rows("b", 3, 3))  # still open: appended to, no new file

    assert finished_early == {"a"}, "three open, two allowed: the oldest is finished"
    assert sorted((file.partition, file.rows) for file in files.files) == [("a", 3), ("b", 6), ("c", 3)]
    # identity: the value is in the folder, not the file
    assert all("shard_id" not in pq.read_schema(tmp_path / file.name).names for file in files.files)


def test_leaving_with_an_error_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), TaskFiles(Place(str(tmp_path)), "s", FileLayout(DEFAULT)) as files:
        files.write(rows("s", 0, 5, hours=0))
        files.write(rows("s", 5, 5, hours=3))
        raise RuntimeError("the task failed")
    assert [path for path in tmp_path.rglob("*") if path.is_file()] == []
    assert files.files == []


def test_threads_writing_at_once_lose_no_row(tmp_path: Path) -> None:
    with TaskFiles(Place(str(tmp_path)), "s", FileLayout(DEFAULT, True, 16 * 1024), max_open=1) as files:

        def shard(name: str) -> None:
            for start in range(0, 300, 10):
                files.write(rows(name, start, 10, hours=start % 4, payload=256))

        threads = [threading.Thread(target=shard, args=(f"s{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    table = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 1200 == sum(file.rows for file in files.files)
    assert (
        table.group_by("shard_id").aggregate([("n", "count_distinct")]).column("n_count_distinct").to_pylist()
        == [300] * 4
    )


# Every route's files: a known route's in its table's data place, a new route's in the batch's
# staging, new routes' records held as dead letters; at most max_routes routes with files open.


def targets(tmp_path: Path) -> RouteTargets:
    staging = tmp_path / "staging" / "routes"
    staging.mkdir(parents=True)
    (tmp_path / "click" / "data").mkdir(parents=True)
    known = {"click": Target(Place(str(tmp_path / "click" / "data")), FileLayout())}
    return RouteTargets(known, Target(Place(str(staging)), FileLayout()))


def numbers(n: int) -> pa.RecordBatch:
    return pa.record_batch({"n": list(range(n))})


def test_known_routes_write_in_their_table_and_new_ones_in_the_staging_each_file_naming_its_route(
    tmp_path: Path,
) -> None:
    found = targets(tmp_path)
    assert RouteTargets.from_json(found.to_json()) == found
    with RouteFiles(found, "shardId-1", FileLayout()) as files:
        files.write("click", numbers(3))
        files.write("refund", numbers(2))
        files.hold(pa.record_batch({"data": [b"x", b"y"], HELD_ROUTE: ["refund", "refund"]}))
    by_route = {file.route: file for file in files.files}
    assert set(by_route) == {"click", "refund"} and by_route["click"].rows == 3 and by_route["refund"].rows == 2
    assert (tmp_path / "click" / "data" / by_route["click"].name).exists()
    assert (tmp_path / "staging" / "routes" / "refund" / by_route["refund"].name).exists()
    [held] = files.held_files
    assert pq.read_table(tmp_path / "staging" / "routes" / "_held" / held.name).column(HELD_ROUTE).to_pylist() == [
        "refund",
        "refund",
    ]
    places = {place.uri for place in found.places()}
    assert places == {
        str(tmp_path / "click" / "data"),
        *(str(tmp_path / "staging" / "routes" / f) for f in ("_held", "refund")),
    }


def test_past_max_routes_the_least_recently_written_routes_files_are_finished_first(tmp_path: Path) -> None:
    with RouteFiles(targets(tmp_path), "shardId-1", FileLayout(), max_routes=2) as files:
        for route in ("a", "b", "c", "a", "d"):
            files.write(route, numbers(1))
            writing = sorted(path.parent.name for path in tmp_path.rglob("*.partial"))  # a file not yet finished
            assert len(writing) <= 2, writing
        finished_early = sorted(file.route or "" for file in files.files)
    assert finished_early == ["a", "b", "c"]  # a (after its first write, then again), b, c: before the end
    assert sorted(file.route or "" for file in files.files) == ["a", "a", "b", "c", "d"]


def test_a_run_without_routes_writes_its_one_routes_files_in_its_data_place_and_holds_nothing(tmp_path: Path) -> None:
    single = RouteTargets.single(Place(str(tmp_path)), FileLayout())
    assert RouteTargets.from_json(single.to_json()) == single and single.places() == [Place(str(tmp_path))]
    with RouteFiles(single, "shardId-1", FileLayout(), schemas=False) as files:
        files.write(SINGLE, numbers(2))
        with pytest.raises(InvalidStateError, match="has no table and this run makes none"):
            files.write("click", numbers(1))
        with pytest.raises(InvalidStateError, match="makes no table"):
            files.hold(pa.record_batch({"data": [b"x"], HELD_ROUTE: ["click"]}))
    [file] = files.files
    assert file.rows == 2 and (tmp_path / file.name).exists() and files.held_files == []
    assert "route" not in file.to_json() and file.schema is None  # as a run without routes always named them
