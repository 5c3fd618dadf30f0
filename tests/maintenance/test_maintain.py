"""Maintenance of every format, locally and on S3 (moto), on sinks holding published batches of
staged files (as the Spark tasks write them): compaction keeps every row once, expiry and orphan
removal never make a committed batch look uncommitted nor a discarded one publishable, and a
batch staged meanwhile is left alone."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import LeaseLostError
from kinesis_batch.events import Event, observing
from kinesis_batch.maintenance import MaintainSettings, maintain
from kinesis_batch.output import Sink
from kinesis_batch.output.datafiles import FileStats
from kinesis_batch.storage.place import Place
from tests.output.support import commit_record, output_args, read_rows, sink_of, stage

pytestmark = pytest.mark.contract("tables", why="compaction, expiry and clean-up with these table libraries")

KINDS = [("parquet", "local"), ("delta", "local"), ("delta", "s3"), ("iceberg", "local"), ("iceberg", "s3")]
IDS = [f"{format}-{where}" for format, where in KINDS]
#: Maintenance two hours from now: what it finds is old enough to expire and to call an orphan.
LATER = MaintainSettings(retain_hours=0)


def two_hours_later() -> float:
    return time.time() + 2 * 3600


@pytest.fixture(params=KINDS, ids=IDS)
def sink(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Sink:
    format, where = request.param
    made = sink_of(output_args(format, where, tmp_path, monkeypatch), app="kinesis-batch-tests")
    made.prepare()
    return made


def publish_batches(sink: Sink, count: int) -> list[str]:
    batches = []
    for number in range(count):
        record = commit_record(f"b-{number}")
        assert sink.publish(record, stage(sink, record))
        batches.append(record.batch_id)
    return batches


def keys(rows: dict[str, list[Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(zip(rows["shard_id"], rows["data"], rows["batch_id"], strict=True))


def test_maintenance_compacts_each_partition_into_one_file_and_keeps_every_row_once(sink: Sink) -> None:
    publish_batches(sink, 4)
    before = read_rows(sink)
    files = FileStats.of(sink.data_files())
    assert (files.files, files.partitions) == (8, 1)  # a file per shard and batch, all of one day

    report = maintain(sink, LATER, clock=two_hours_later)

    after = read_rows(sink)
    assert keys(after) == keys(before) and len(after["data"]) == 24
    stats = FileStats.of(sink.data_files())
    # Parquet folders compact within a batch (its folder is its batch id): one file a batch.
    assert stats.files == (4 if sink.format == "parquet" else 1), sink.data_files()
    assert report.compacted.files_removed == 8 and report.after.files == stats.files


def test_a_new_output_of_ours_with_no_batch_yet_is_maintained(sink: Sink) -> None:
    report = maintain(sink, LATER, clock=two_hours_later)  # a daily maintenance before the first run
    assert (report.before.files, report.after.files) == (0, 0)


def test_after_expiry_every_batch_is_still_committed_and_the_last_one_is_still_last(sink: Sink) -> None:
    batches = publish_batches(sink, 3)
    records = {batch: sink.committed(batch) for batch in batches}
    last = sink.last_batch()

    report = maintain(sink, LATER, clock=two_hours_later)
    maintain(sink, LATER, clock=two_hours_later)  # a second run finds nothing new, and loses nothing

    if sink.format != "parquet":
        assert report.versions_expired > 0, "old snapshots or versions were expired"
        assert report.markers_archived >= 3
    fresh = sink_of_same(sink)
    assert {batch: fresh.committed(batch) for batch in batches} == records
    assert fresh.last_batch() == last
    assert fresh.committed("never-published") is None


def test_a_batch_published_between_the_archive_and_the_expiry_stays_committed(sink: Sink) -> None:
    publish_batches(sink, 2)
    late = commit_record("late")
    files = stage(sink, late)
    other = sink_of_same(sink)  # a catch-up run's own handle

    def publish_now(event: Event) -> None:
        if event.step == "archived" and other.committed("late") is None:
            assert other.publish(late, files)

    with observing(publish_now):
        maintain(sink, LATER, clock=two_hours_later)  # retain 0: everything old enough goes
    maintain(sink, LATER, clock=two_hours_later)  # and the next one archives it

    assert sink_of_same(sink).committed("late") == late


def test_no_run_cleans_a_delta_log_of_ours_only_maintenance_after_archiving(sink: Sink) -> None:
    if sink.format != "delta":
        pytest.skip("deltalake's writers clean a Delta log at their checkpoints; nothing else cleans one")
    publish_batches(sink, 1)
    maintain(sink, LATER, clock=two_hours_later)  # the table's log retention is now 0 hours
    late = [commit_record(f"late-{number}") for number in range(12)]  # past a checkpoint (every 10)
    for record in late:
        assert sink.publish(record, stage(sink, record))

    fresh = sink_of_same(sink)
    assert {record.batch_id: fresh.committed(record.batch_id) for record in late} == {r.batch_id: r for r in late}


def test_a_discarded_batch_stays_unpublishable_once_its_marker_expired(sink: Sink) -> None:
    publish_batches(sink, 1)
    late = commit_record("late")
    files = stage(sink, late)
    assert sink.discard("late") is True

    maintain(sink, LATER, clock=two_hours_later)

    with pytest.raises(LeaseLostError, match="discarded"):
        sink_of_same(sink).publish(late, files)
    assert sink.committed("late") is None


def test_a_batch_staged_during_maintenance_is_left_alone_and_publishes_after(sink: Sink) -> None:
    publish_batches(sink, 2)
    pending = commit_record("pending")
    files = stage(sink, pending)

    maintain(sink, LATER, clock=two_hours_later)

    assert sink.publish(pending, files), "its staged files survived the orphan removal"
    assert len(read_rows(sink)["data"]) == 18


def test_orphans_are_removed_but_not_young_ones(sink: Sink) -> None:
    publish_batches(sink, 3)
    maintain(sink, LATER, clock=two_hours_later)
    stray = table_root(sink).child("data", "crashed-batch") if sink.format != "parquet" else None
    if stray is not None:  # a crashed writer's file in a batch folder nobody stages any more
        stray.write_text("part-x.parquet", "not a table file")
    maintain(sink, LATER)  # now: the stray file is younger than an hour
    if stray is not None:
        assert stray.read_text("part-x.parquet") is not None, "a young file was removed"

    report = maintain(sink, LATER, clock=two_hours_later)

    if stray is not None:
        assert stray.read_text("part-x.parquet") is None
        assert report.orphans_removed >= 1
    rows = read_rows(sink)
    assert len(rows["data"]) == 18


def test_the_staging_a_crash_left_of_a_published_batch_goes_and_stops_guarding_its_files(sink: Sink) -> None:
    batches = publish_batches(sink, 3)
    if sink.format == "parquet":
        pytest.skip("a parquet batch's staging is its folder, renamed by the publish: none is left")
    sink.write_manifest(batches[0], {"batch": batches[0]})  # a publish killed before its clean-up

    maintain(sink, LATER, clock=two_hours_later)

    assert not sink.staging(batches[0]).exists()
    assert not table_root(sink).child("data", batches[0]).sizes(recursive=True), "its replaced files were kept"
    assert sink_of_same(sink).committed(batches[0]) is not None


def test_a_decoding_runs_plan_stages_the_batch_in_the_dead_letter_output_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kinesis_batch.output.composite import RunSink

    main, dead = (sink_of(output_args("delta", "local", tmp_path, monkeypatch)) for _ in range(2))
    RunSink.single(main, dead).write_manifest("b-1", {"batch": "b-1"})
    assert main.staging("b-1").exists() and dead.staging("b-1").exists()


def table_root(sink: Sink) -> Place:
    root = sink.root() if callable(sink.root) else sink.root  # type: ignore[attr-defined]
    assert isinstance(root, Place)
    return root


def sink_of_same(sink: Sink) -> Sink:
    """The same output, opened afresh (another process)."""
    from kinesis_batch.aws import s3_settings
    from kinesis_batch.output import open_sink

    catalog = getattr(getattr(sink, "catalog", None), "name", None)
    output = getattr(sink, "identifier", sink.uri)
    return open_sink(sink.format, output, app="kinesis-batch-tests", stream="s", catalog=catalog, s3=s3_settings())
