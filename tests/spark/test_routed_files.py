"""A routed task's files (kinesis_batch.spark.routed_files): a known route's in its table's data
place, a new route's in the batch's staging, new routes' records held as dead letters; at most
``max_routes`` routes with files open at once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kinesis_batch.routing.routes import HELD_ROUTE
from kinesis_batch.spark.routed_files import RoutedFiles, RouteTargets, Target
from kinesis_batch.storage.layout import FileLayout
from kinesis_batch.storage.place import Place


def targets(tmp_path: Path) -> RouteTargets:
    staging = tmp_path / "staging" / "routes"
    staging.mkdir(parents=True)
    (tmp_path / "click" / "data").mkdir(parents=True)
    known = {"click": Target(Place(str(tmp_path / "click" / "data")), FileLayout())}
    return RouteTargets(Target(Place(str(staging)), FileLayout()), known)


def rows(n: int) -> pa.RecordBatch:
    return pa.record_batch({"n": list(range(n))})


def test_known_routes_write_in_their_table_and_new_ones_in_the_staging_each_file_naming_its_route(
    tmp_path: Path,
) -> None:
    found = targets(tmp_path)
    assert RouteTargets.from_json(found.to_json()) == found
    with RoutedFiles(found, "shardId-1", FileLayout()) as files:
        files.write("click", rows(3))
        files.write("refund", rows(2))
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
    with RoutedFiles(targets(tmp_path), "shardId-1", FileLayout(), max_routes=2) as files:
        for route in ("a", "b", "c", "a", "d"):
            files.write(route, rows(1))
            writing = sorted(path.parent.name for path in tmp_path.rglob("*.partial"))  # a file not yet finished
            assert len(writing) <= 2, writing
        finished_early = sorted(file.route or "" for file in files.files)
    assert finished_early == ["a", "b", "c"]  # a (after its first write, then again), b, c: before the end
    assert sorted(file.route or "" for file in files.files) == ["a", "a", "b", "c", "d"]
