"""A run's tables and dead-letter output published as one sink (kinesis_batch.output.composite),
one table of cases over its two shapes and every format:

- ``one table``: the table holds the staging and the record; its dead-letter output is the gate,
  published first, fenced first;
- ``template``: three routes' tables, the first by name the gate, the others side by side, then
  the dead-letter output, which holds the staging and the record.

Either way a crash between two members is completed by whoever looks next, a discard fences the
gate first so a late publish reaches no member, and a race leaves the batch in all or none."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kinesis_batch import LeaseLostError
from kinesis_batch.aws import s3_settings
from kinesis_batch.columns import DEAD_LETTER_SCHEMA, DEAD_LETTERS, RAW
from kinesis_batch.events import DEAD_LETTERS_PUBLISHED, TABLE_PUBLISHED, observing
from kinesis_batch.output import Output, Stored
from kinesis_batch.output.composite import RunSink
from kinesis_batch.routing.routes import SINGLE, table_of
from kinesis_batch.shards.reader import ReadResult
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import RangeResult, StagedFile
from tests.output.support import commit_record, output_args, race, read_rows, stage

KINDS = [("parquet", "local"), ("delta", "s3"), ("iceberg", "local")]
ROUTES = ("orders", "items", "users")  # published as items, orders, users
DEAD = "dead letters"  # a member's name in these tests: the dead-letter output


@dataclass
class Case:
    """One shape of the composite: its sink, its members by name, and what each holds."""

    sink: RunSink
    names: tuple[str, ...]  # the members, in the publish's order (the holder last)
    #: The events a publish tells, in order, before the holder's (the gate's first).
    gate_events: tuple[tuple[str, str | None], ...]

    def member(self, name: str) -> Stored:
        dead = self.sink.dead_letters()
        assert dead is not None
        return dead if name == DEAD else self.sink.table(name)

    @property
    def holder(self) -> str:
        return self.names[-1]

    @property
    def gate(self) -> str:
        return self.names[0]

    def rows(self) -> dict[str, int]:
        return {name: len(read_rows(self.member(name)).get("data", [])) for name in self.names}

    def holding(self, batch_id: str) -> set[str]:
        return {name for name in self.names if self.member(name).committed(batch_id) is not None}

    def stage(self, record: CommitRecord) -> list[StagedFile]:
        """The batch's rows (three per shard in each table), one dead letter per shard, and the
        results in the holder's staging that name them all: the batch's row files returned."""
        batch_id, sink = record.batch_id, self.sink
        tables = [name for name in self.names if name != DEAD]
        named = {t: None if t == SINGLE else t for t in tables}  # a fixed table's files name no route
        rows = {t: [replace(f, route=named[t]) for f in stage(self.member(t), record)] for t in tables}
        dead = self.member(DEAD)
        data = dead.data(batch_id)
        data.make_dirs()
        sink.staging(batch_id).make_dirs()
        for shard in record.shards:
            name = f"part-{shard.shard_id}-{uuid.uuid4().hex[:12]}.parquet"
            with data.open_part(name) as stream:
                pq.write_table(_dead_letter(dead, shard.shard_id, batch_id), stream)
            mine = tuple(f for files in rows.values() for f in files if f"-{shard.shard_id}-" in f.name)
            read = ReadResult(shard.shard_id, "10", 0, 4, 40, False, 0, 1, 0, 0)
            result = RangeResult(read, mine, (StagedFile(name, 1),))
            sink.results(batch_id).write_text(f"{shard.shard_id}.json", result.to_json())
        return [f for files in rows.values() for f in files]

    def publish_member(self, name: str, record: CommitRecord, files: list[StagedFile]) -> None:
        """One member's publish alone, as a crash right after it leaves it."""
        if name == DEAD:
            dead = self.member(DEAD)
            mine = [StagedFile(f, 1) for f in dead.data(record.batch_id).list("part-")]
        else:
            mine = [f for f in files if (f.route or SINGLE) == name]
        assert self.member(name).publish(record, mine) is True


def _dead_letter(dead: Stored, shard_id: str, batch_id: str) -> pa.Table:
    row = {
        "shard_id": shard_id, "sequence_number": "9", "sub_sequence_number": 0, "partition_key": "k",
        "data": b"{bad", "approximate_arrival_timestamp": datetime(2026, 11, 25, tzinfo=UTC), "lineage_depth": 0,
        "stage": "decode", "reason": "not JSON: ...",
    }  # fmt: skip
    if dead.format == "parquet":
        return pa.Table.from_pylist([row], schema=DEAD_LETTER_SCHEMA)
    return pa.Table.from_pylist([row | {"batch_id": batch_id}], schema=DEAD_LETTERS.schema(batch_column=True))


def one_table(output: Output) -> Case:
    sink = output.open(app="t", stream="s", s3=s3_settings())
    dead = output.dead_letter().open(app="t", stream="s", s3=s3_settings())
    made = RunSink.single(sink, dead)
    made.prepare(RAW)
    return Case(made, (DEAD, SINGLE), ((DEAD_LETTERS_PUBLISHED, None),))


def template(output: Output) -> Case:
    joint = "_" if output.format == "iceberg" else "/"  # NAMESPACE.T_{route}, or a folder per table
    named = Output(output.format, output.output + joint + "{route}", output.catalog)
    home = Output(output.format, table_of(named.output, "dead-letters"), output.catalog)
    made = RunSink.template(
        named.output,
        home.open(app="t", stream="s", s3=s3_settings()),
        lambda route: named.route(route).open(app="t", stream="s", s3=s3_settings()),
    )
    made.prepare()
    made.prepare_tables(dict.fromkeys(ROUTES, RAW))
    first, *others = sorted(ROUTES)
    return Case(made, (first, *others, DEAD), tuple((TABLE_PUBLISHED, route) for route in (first, *others)))


SHAPES: dict[str, Callable[[Output], Case]] = {"one table": one_table, "template": template}


@pytest.fixture(
    params=[(shape, *kind) for shape in SHAPES for kind in KINDS],
    ids=[f"{shape}-{f}-{w}" for shape in SHAPES for f, w in KINDS],
)
def case(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Case:
    shape, format, where = request.param
    options = dict(zip(*[iter(output_args(format, where, tmp_path, monkeypatch))] * 2, strict=True))
    return SHAPES[shape](Output(options["--format"], options["--output"], options.get("--catalog")))


def test_the_gate_is_published_first_then_the_others_then_the_holder_with_the_record(case: Case) -> None:
    record = commit_record("b-1")
    files = case.stage(record)
    holder = case.member(case.holder)
    seen: list[tuple[str, str | None, bool]] = []
    with observing(lambda e: seen.append((e.step, e.shard_id, holder.committed("b-1") is not None))):
        assert case.sink.publish(record, files) is True
    gate, *others = case.gate_events  # the others side by side: in any order
    assert seen[0] == (*gate, False), "the gate was not published first"
    assert sorted(seen[1:]) == sorted((*event, False) for event in others), "the holder had the batch too early"
    assert all(n == (2 if name == DEAD else 6) for name, n in case.rows().items()), case.rows()
    assert case.sink.committed("b-1") == record and case.holding("b-1") == set(case.names)
    assert not case.sink.staging("b-1").exists(), "the staging outlived the batch's last commit"
    assert case.sink.publish(record, files) is False
    assert all(n == (2 if name == DEAD else 6) for name, n in case.rows().items()), "published twice"


def test_a_crash_after_the_gate_is_completed_by_whoever_looks_next(case: Case) -> None:
    record = commit_record("b-1")
    files = case.stage(record)
    case.publish_member(case.gate, record, files)
    assert case.holding("b-1") == {case.gate}
    assert case.sink.committed("b-1") == record  # recovery (or a retried publish) asks, and completes
    assert case.holding("b-1") == set(case.names)
    assert all(n == (2 if name == DEAD else 6) for name, n in case.rows().items()), case.rows()
    assert case.sink.discard("b-1") is False, "a batch any member holds is never discarded"
    assert case.sink.publish(record, files) is False


def test_a_discard_fences_the_gate_so_a_late_publish_reaches_no_member(case: Case) -> None:
    record = commit_record("b-1")
    files = case.stage(record)
    assert case.sink.discard("b-1") is True
    with pytest.raises(LeaseLostError, match="discarded"):
        case.sink.publish(record, files)
    assert case.rows() == dict.fromkeys(case.names, 0)
    assert case.sink.committed("b-1") is None and case.holding("b-1") == set()
    for name in case.names:
        if name not in (DEAD, case.holder):  # (the holder's data place is its own to keep)
            assert not case.member(name).data("b-1").exists(), f"{name}: the discarded batch's files were left"


def test_a_late_publish_racing_a_discard_leaves_the_batch_in_every_member_or_in_none(case: Case) -> None:
    for attempt in range(3):
        record = commit_record(f"b-{attempt}")
        files = case.stage(record)
        outcome = race(case.sink, case.sink, record, files)
        assert set(outcome) == {"published", "discarded"}, outcome
        holding = case.holding(record.batch_id)
        assert holding in (set(), set(case.names)), f"attempt {attempt}: {holding}, {outcome}"
        assert outcome["discarded"] is not bool(holding), outcome


def test_a_raw_run_s_one_table_is_the_sink_itself(tmp_path: Path) -> None:
    """No dead-letter output: the table alone publishes, looks up and discards."""
    table = Output("parquet", str(tmp_path / "raw")).open(app="t", stream="s")
    sink = RunSink.single(table)
    sink.prepare(RAW)
    record, other = commit_record("b-1"), commit_record("b-2")
    files = stage(table, record)
    assert sink.publish(record, files) is True and table.committed("b-1") == record
    assert sink.publish(record, files) is False
    stage(table, other)
    assert sink.discard("b-2") is True and sink.committed("b-2") is None
    assert len(read_rows(table)["data"]) == 6 and sink.dead_letters() is None


# -- a template's own: the tables its runs make --------------------------------------------------


@pytest.fixture(params=KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def routed(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Case:
    format, where = request.param
    options = dict(zip(*[iter(output_args(format, where, tmp_path, monkeypatch))] * 2, strict=True))
    return template(Output(options["--format"], options["--output"], options.get("--catalog")))


def test_a_batch_that_made_a_table_is_discarded_in_it_too_before_its_results_name_the_table(routed: Case) -> None:
    sink, record = routed.sink, commit_record("b-1")
    files = routed.stage(record)
    sink.prepare_tables({"fresh": RAW})
    sink.decided("b-1", made={"fresh"}, refused={"late"})  # then a crash as its files moved in
    moved = stage(sink.table("fresh"), record)
    assert moved and sink.table("fresh").data("b-1").exists()

    assert sink.discard("b-1") is True
    assert not sink.table("fresh").data("b-1").exists(), "the files moved into the new table were left"
    assert sink.committed("b-1") is None and sink.table("fresh").committed("b-1") is None
    with pytest.raises(LeaseLostError):
        sink.publish(record, files)
    reopened = RunSink.template(sink.uri, sink.holder, sink.table)
    assert reopened.known == {*ROUTES, "fresh"}, "the stream's tables: those it made, as its bookkeeping records"


def test_the_files_a_read_left_in_its_tables_before_any_result_named_them_are_discarded(routed: Case) -> None:
    sink, record = routed.sink, commit_record("b-2")
    sink.staging("b-2").make_dirs()
    sink.targeted("b-2", ROUTES)  # the tables the tasks were given, recorded before they wrote
    stage(sink.table("users"), record)  # a task's files, and then the read died: no result names them
    assert sink.table("users").data("b-2").exists()

    sink.discard("b-2")
    assert not sink.table("users").data("b-2").exists(), "the dead read's files were left in the table"
    assert routed.rows() == dict.fromkeys(routed.names, 0)


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
    routed: Case,
) -> None:
    sink, record = routed.sink, commit_record("b-3")
    files = routed.stage(record)
    routed.publish_member(routed.gate, record, files)  # the late publish got there first

    racing = RunSink.template(
        sink.uri,
        sink.holder,
        lambda r: _MovedFirst(sink.table(r)) if r != routed.gate else sink.table(r),  # type: ignore[return-value]
    )
    assert racing.discard("b-3") is False, "a decided batch is not discarded"
    assert sink.holder.committed("b-3") is None and sink.holder.staging("b-3").exists(), "its bookkeeping stays"

    assert sink.committed("b-3") is not None  # whoever looks next completes it
    assert routed.holding("b-3") == set(routed.names)


@pytest.mark.parametrize("routed", [("iceberg", "local")], ids=["iceberg-local"], indirect=True)
def test_a_new_route_adopts_only_a_table_of_its_own_that_the_record_lost(routed: Case) -> None:
    """On Iceberg, whose catalog says what exists (a Delta table's folder is the scenario's:
    tests/scenarios/test_routed.py)."""
    sink, record = routed.sink, commit_record("b1")
    published = RunSink.template(sink.uri, sink.holder, sink.table, known=())  # the record lost every name
    empty = "refunds"
    RunSink.template(sink.uri, sink.holder, sink.table).table(empty).prepare(RAW)  # made, then a crash

    assert sink.publish(record, routed.stage(record))
    assert published.prepare_tables(dict.fromkeys([*ROUTES, empty], RAW)) == {}, "its own tables, adopted"

    opener = sink._open  # a fresh sink per call: the other consumer's is not this one's
    somebody = RunSink.template(sink.uri, sink.holder, opener)
    theirs = opener("theirs")  # another consumer's table, where this template would put route "theirs"
    theirs.app = "another-consumer"  # type: ignore[attr-defined]
    theirs.prepare(RAW)
    mine = commit_record("t1")
    assert theirs.publish(mine, stage(theirs, mine))
    refused = somebody.prepare_tables({"theirs": RAW})
    assert list(refused) == ["theirs"] and "theirs names" in refused["theirs"], refused
    assert "theirs" not in somebody.known
