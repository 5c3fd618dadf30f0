"""A routed run's tables and dead-letter output published as one: the first table in the order
of their routes, the others side by side, then the dead-letter output with the batch's record;
a crash between two tables is completed by whoever looks next; a discard fences the first table
first, so a late publish never reaches another. On every format."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kinesis_batch import LeaseLostError
from kinesis_batch.aws import s3_settings
from kinesis_batch.columns import RAW
from kinesis_batch.events import TABLE_PUBLISHED, observing
from kinesis_batch.output import Output
from kinesis_batch.output.routed import RoutedSink
from kinesis_batch.routing.routes import table_of
from kinesis_batch.shards.reader import ReadResult
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import RangeResult, StagedFile
from tests.output.support import commit_record, output_args, race, read_rows, stage

KINDS = [("parquet", "local"), ("delta", "s3"), ("iceberg", "local")]
ROUTES = ("orders", "items", "users")  # published as items, orders, users


@pytest.fixture(params=KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def routed(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RoutedSink:
    format, where = request.param
    options = dict(zip(*[iter(output_args(format, where, tmp_path, monkeypatch))] * 2, strict=True))
    joint = "_" if format == "iceberg" else "/"  # NAMESPACE.T_{route}, or a folder per table
    template = options["--output"] + joint + "{route}"

    def output(route: str) -> Output:
        return Output(options["--format"], table_of(template, route), options.get("--catalog"))

    home = output("dead-letters").open(app="t", stream="s", s3=s3_settings())
    made = RoutedSink(template, home, lambda route: output(route).open(app="t", stream="s", s3=s3_settings()))
    made.prepare()
    made.prepare_tables(dict.fromkeys(ROUTES, RAW))
    return made


def staged_in_three_tables(routed: RoutedSink, record: CommitRecord) -> list[StagedFile]:
    """The batch's rows in each route's table, and the results (in the home) that name them."""
    files: list[StagedFile] = []
    for route in ROUTES:
        files += [replace(file, route=route) for file in stage(routed.table(route), record)]
    routed.home.staging(record.batch_id).make_dirs()
    for shard in record.shards:
        read = ReadResult(shard.shard_id, "10", 0, 3, 30, False, 0, 1, 0, 0)
        mine = tuple(file for file in files if f"-{shard.shard_id}-" in file.name)
        routed.home.results(record.batch_id).write_text(f"{shard.shard_id}.json", RangeResult(read, mine).to_json())
    return files


def rows_by_table(routed: RoutedSink) -> dict[str, int]:
    return {route: len(read_rows(routed.table(route)).get("data", [])) for route in ROUTES}


def test_the_first_route_s_table_is_published_first_then_the_others_then_the_dead_letters_with_the_record(
    routed: RoutedSink,
) -> None:
    record = commit_record("b-1")
    files = staged_in_three_tables(routed, record)
    seen: list[tuple[str, str | None, bool]] = []
    with observing(lambda e: seen.append((e.step, e.shard_id, routed.home.committed("b-1") is not None))):
        assert routed.publish(record, files) is True
    first, *others = sorted(ROUTES)  # the gate; the others side by side
    assert seen[0] == (TABLE_PUBLISHED, first, False)
    assert sorted(seen[1:]) == [(TABLE_PUBLISHED, route, False) for route in others]
    assert rows_by_table(routed) == dict.fromkeys(ROUTES, 6)
    assert routed.committed("b-1") == record and all(routed.table(r).committed("b-1") == record for r in ROUTES)
    assert not routed.staging("b-1").exists(), "the staging outlived the batch's last commit"
    assert routed.publish(record, files) is False
    assert rows_by_table(routed) == dict.fromkeys(ROUTES, 6)


def test_a_crash_between_two_tables_is_completed_by_whoever_looks_next(routed: RoutedSink) -> None:
    record = commit_record("b-1")
    files = staged_in_three_tables(routed, record)
    first = sorted(ROUTES)[0]
    assert routed.table(first).publish(record, [f for f in files if f.route == first]) is True
    assert rows_by_table(routed) == {"orders": 0, "items": 6, "users": 0}
    assert routed.committed("b-1") == record  # recovery (or a retried publish) asks, and completes
    assert rows_by_table(routed) == dict.fromkeys(ROUTES, 6)
    assert routed.home.committed("b-1") == record
    assert routed.discard("b-1") is False, "a batch in any of its tables is never discarded"
    assert routed.publish(record, files) is False


def test_a_discard_fences_the_first_table_so_a_late_publish_reaches_none(routed: RoutedSink) -> None:
    record = commit_record("b-1")
    files = staged_in_three_tables(routed, record)
    assert routed.discard("b-1") is True
    with pytest.raises(LeaseLostError, match="discarded"):
        routed.publish(record, files)
    assert rows_by_table(routed) == dict.fromkeys(ROUTES, 0)
    assert routed.committed("b-1") is None
    for route in ROUTES:
        assert not routed.table(route).data("b-1").exists(), f"{route}: the discarded batch's files were left"


def test_a_late_publish_racing_a_discard_leaves_the_batch_in_every_table_or_in_none(routed: RoutedSink) -> None:
    for attempt in range(3):
        record = commit_record(f"b-{attempt}")
        files = staged_in_three_tables(routed, record)
        outcome = race(routed, routed, record, files)
        assert set(outcome) == {"published", "discarded"}, outcome
        holding = {route for route in ROUTES if routed.table(route).committed(record.batch_id) is not None}
        in_home = routed.home.committed(record.batch_id) is not None
        assert holding in (set(), set(ROUTES)) and in_home == bool(holding), f"attempt {attempt}: {holding}, {outcome}"
        assert outcome["discarded"] is not in_home, outcome


def test_a_batch_that_made_a_table_is_discarded_in_it_too_before_its_results_name_the_table(
    routed: RoutedSink,
) -> None:
    record = commit_record("b-1")
    files = staged_in_three_tables(routed, record)
    routed.prepare_tables({"fresh": RAW})
    routed.decided("b-1", made={"fresh"}, refused={"late"})  # then a crash as its files moved in
    moved = stage(routed.table("fresh"), record)
    assert moved and routed.table("fresh").data("b-1").exists()

    assert routed.discard("b-1") is True
    assert not routed.table("fresh").data("b-1").exists(), "the files moved into the new table were left"
    assert routed.committed("b-1") is None and routed.table("fresh").committed("b-1") is None
    with pytest.raises(LeaseLostError):
        routed.publish(record, files)
    reopened = RoutedSink(routed.uri, routed.home, routed.table)
    assert reopened.known == {*ROUTES, "fresh"}, "the stream's tables: those it made, as its bookkeeping records"


def test_the_files_a_read_left_in_its_tables_before_any_result_named_them_are_discarded(routed: RoutedSink) -> None:
    record = commit_record("b-2")
    routed.home.staging("b-2").make_dirs()
    routed.targeted("b-2", ROUTES)  # the tables the tasks were given, recorded before they wrote
    stage(routed.table("users"), record)  # a task's files, and then the read died: no result names them
    assert routed.table("users").data("b-2").exists()

    routed.discard("b-2")
    assert not routed.table("users").data("b-2").exists(), "the dead read's files were left in the table"
    assert rows_by_table(routed) == dict.fromkeys(ROUTES, 0)


class _MovedFirst:
    """A table whose publish of the batch finds its files moved by the publisher, which is
    completing the same batch at this moment (what a table's publish then raises)."""

    def __init__(self, sink: object) -> None:
        self.sink = sink

    def publish(self, record: CommitRecord, files: list[StagedFile]) -> bool:
        raise LeaseLostError(f"batch {record.batch_id} was discarded by another worker's recovery")

    def __getattr__(self, name: str) -> object:
        return getattr(self.sink, name)


def test_a_discard_meeting_a_decided_batch_whose_publisher_is_completing_it_leaves_it_to_the_publisher(
    routed: RoutedSink,
) -> None:
    record = commit_record("b-3")
    files = staged_in_three_tables(routed, record)
    gate = sorted(ROUTES)[0]
    routed.table(gate).publish(record, [f for f in files if f.route == gate])  # the late publish got there first

    racing = RoutedSink(
        routed.uri, routed.home, lambda r: _MovedFirst(routed.table(r)) if r != gate else routed.table(r)
    )
    assert racing.discard("b-3") is False, "a decided batch is not discarded"
    assert routed.home.committed("b-3") is None and routed.home.staging("b-3").exists(), "its bookkeeping stays"

    assert routed.committed("b-3") is not None  # whoever looks next completes it
    assert {route for route in ROUTES if routed.table(route).committed("b-3") is not None} == set(ROUTES)


@pytest.mark.parametrize("routed", [("iceberg", "local")], ids=["iceberg-local"], indirect=True)
def test_a_new_route_adopts_only_a_table_of_its_own_that_the_record_lost(routed: RoutedSink) -> None:
    """On Iceberg, whose catalog says what exists (a Delta table's folder is the scenario's:
    tests/scenarios/test_routed.py)."""
    record = commit_record("b1")
    published = RoutedSink(routed.uri, routed.home, routed.table, known=())  # the record lost every name
    empty = "refunds"
    RoutedSink(routed.uri, routed.home, routed.table).table(empty).prepare(RAW)  # made, then a crash

    assert routed.publish(record, staged_in_three_tables(routed, record))
    assert published.prepare_tables(dict.fromkeys([*ROUTES, empty], RAW)) == {}, "its own tables, adopted"

    opener = routed._open  # a fresh sink per call: the other consumer's is not this one's
    somebody = RoutedSink(routed.uri, routed.home, opener)
    theirs = opener("theirs")  # another consumer's table, where this template would put route "theirs"
    theirs.app = "another-consumer"  # type: ignore[attr-defined]
    theirs.prepare(RAW)
    mine = commit_record("t1")
    assert theirs.publish(mine, stage(theirs, mine))
    refused = somebody.prepare_tables({"theirs": RAW})
    assert list(refused) == ["theirs"] and "theirs names" in refused["theirs"], refused
    assert "theirs" not in somebody.known
