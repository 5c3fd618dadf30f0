"""What only the parquet sink does: hive folders published by rename, the commit record inside."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kinesis_batch import InvalidStateError, LeaseLostError
from kinesis_batch.output.parquet import COMMIT_RECORD, ParquetSink
from kinesis_batch.storage.records import CommitRecord
from tests.output.support import commit_record, read_rows, stage


def test_a_published_batch_is_a_hive_folder_that_carries_its_commit_record(tmp_path: Path) -> None:
    sink = ParquetSink(tmp_path)
    record = commit_record("b-1")
    sink.publish(record, stage(sink, record))
    folder = tmp_path / "batch_id=b-1"
    assert CommitRecord.from_json((folder / COMMIT_RECORD).read_text()) == record
    assert sink.published_batches() == ["b-1"]
    assert set(read_rows(sink)["batch_id"]) == {"b-1"}, "batch_id comes from the folder name"
    assert not Path(sink.staging("b-1").uri).exists()


def test_a_staging_discarded_before_its_commit_record_is_written_does_not_come_back(tmp_path: Path) -> None:
    sink = ParquetSink(tmp_path)
    record = commit_record("b-1")
    files = stage(sink, record)
    shutil.rmtree(sink.staging("b-1").uri)  # another worker's recovery, just before our publish
    with pytest.raises(LeaseLostError, match="discarded"):
        sink.publish(record, files)
    assert sink.published_batches() == []
    assert not Path(sink.staging("b-1").uri).exists()


def test_unwritable_root_says_so(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with pytest.raises(InvalidStateError, match="not writable"):
        ParquetSink(blocked / "out").prepare()


def test_commit_record_round_trips_through_json() -> None:
    record = commit_record("b-1")
    assert CommitRecord.from_json(record.to_json()) == record
