"""A decoding run's table and dead-letter output published as one: dead letters first, then the
table; a crash between the two is completed by whoever looks next; a discard fences the
dead-letter output first, so a late publish never reaches the table. On every format."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest

from kinesis_batch import LeaseLostError
from kinesis_batch.aws import s3_settings
from kinesis_batch.columns import DEAD_LETTER_SCHEMA, DEAD_LETTERS, RAW
from kinesis_batch.events import observing
from kinesis_batch.output import Output
from kinesis_batch.output.paired import DEAD_LETTERS_PUBLISHED, PairedSink
from kinesis_batch.shards.reader import ReadResult
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import RangeResult, StagedFile
from tests.output.support import commit_record, output_args, race, read_rows, stage

KINDS = [("parquet", "local"), ("delta", "s3"), ("iceberg", "local")]


@pytest.fixture(params=KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def pair(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PairedSink:
    format, where = request.param
    options = dict(zip(*[iter(output_args(format, where, tmp_path, monkeypatch))] * 2, strict=True))
    output = Output(options["--format"], options["--output"], options.get("--catalog"))
    main = output.open(app="t", stream="s", s3=s3_settings())
    dead = output.dead_letter().open(app="t", stream="s", s3=s3_settings())
    made = PairedSink(main, dead)
    made.prepare(RAW)
    return made


def staged_with_dead_letters(pair: PairedSink, record: CommitRecord) -> list[StagedFile]:
    """The batch's rows, one dead letter per shard, and the results that name them all."""
    import pyarrow.parquet as pq

    files = stage(pair.main, record)
    data = pair.dead.data(record.batch_id)
    data.make_dirs()
    for shard, file in zip(record.shards, files, strict=True):
        row = {
            "shard_id": shard.shard_id, "sequence_number": "9", "sub_sequence_number": 0, "partition_key": "k",
            "data": b"{bad", "approximate_arrival_timestamp": datetime(2026, 11, 25, tzinfo=UTC), "lineage_depth": 0,
            "stage": "decode", "reason": "not JSON: ...",
        }  # fmt: skip
        schema = DEAD_LETTER_SCHEMA if pair.dead.format == "parquet" else DEAD_LETTERS.schema(batch_column=True)
        if pair.dead.format != "parquet":
            row["batch_id"] = record.batch_id
        name = f"part-{shard.shard_id}-{uuid.uuid4().hex[:12]}.parquet"
        with data.open_part(name) as stream:
            pq.write_table(pa.Table.from_pylist([row], schema=schema), stream)
        read = ReadResult(shard.shard_id, "10", 0, 4, 40, False, 0, 1, 0, 0)
        result = RangeResult(read, (file,), (StagedFile(name, 1),))
        pair.main.results(record.batch_id).write_text(f"{shard.shard_id}.json", result.to_json())
    return files


def test_dead_letters_are_published_first_then_the_table(pair: PairedSink) -> None:
    record = commit_record("b-1")
    files = staged_with_dead_letters(pair, record)
    seen: list[tuple[str, int]] = []
    with observing(lambda event: seen.append((event.step, len(read_rows(pair.main))))):
        assert pair.publish(record, files) is True
    assert seen == [(DEAD_LETTERS_PUBLISHED, 0)], "the table had rows before the dead letters were in"
    assert len(read_rows(pair.main)["data"]) == 6 and len(read_rows(pair.dead)["data"]) == 2
    assert pair.committed("b-1") == record and pair.dead.committed("b-1") == record
    assert pair.publish(record, files) is False


def test_a_crash_between_the_two_publishes_is_completed_by_whoever_looks_next(pair: PairedSink) -> None:
    record = commit_record("b-1")
    files = staged_with_dead_letters(pair, record)
    assert pair.dead.publish(record, [StagedFile(f.name, 1) for f in _dead_files(pair, "b-1")]) is True
    assert read_rows(pair.main) == {}
    assert pair.committed("b-1") == record  # recovery (or a retried publish) asks, and completes
    assert len(read_rows(pair.main)["data"]) == 6
    assert pair.discard("b-1") is False, "a batch in either output is never discarded"
    assert pair.publish(record, files) is False


def test_a_discard_fences_the_dead_letters_first_so_a_late_publish_never_reaches_the_table(pair: PairedSink) -> None:
    record = commit_record("b-1")
    files = staged_with_dead_letters(pair, record)
    assert pair.discard("b-1") is True
    with pytest.raises(LeaseLostError, match="discarded"):
        pair.publish(record, files)
    assert read_rows(pair.main) == {} and read_rows(pair.dead) == {}
    assert pair.committed("b-1") is None


def test_a_late_publish_racing_a_discard_leaves_the_batch_in_both_outputs_or_in_neither(pair: PairedSink) -> None:
    for attempt in range(3):
        record = commit_record(f"b-{attempt}")
        files = staged_with_dead_letters(pair, record)
        outcome = race(pair, pair, record, files)
        assert set(outcome) == {"published", "discarded"}, outcome
        in_main = pair.main.committed(record.batch_id) is not None
        in_dead = pair.dead.committed(record.batch_id) is not None
        assert in_main == in_dead, f"attempt {attempt}: table {in_main}, dead letters {in_dead} ({outcome})"
        # Discarded, or in both (published by the late run, or completed by the discarding one).
        assert outcome["discarded"] is not in_main, outcome


def _dead_files(pair: PairedSink, batch: str) -> list[StagedFile]:
    return [StagedFile(name, 1) for name in pair.dead.data(batch).list("part-")]
