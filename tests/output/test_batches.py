"""Atomic publish: all of a batch or none, once; discard and publish race to one winner."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from kinesis_batch import Checkpoint, InvalidStateError
from kinesis_batch.output.batches import BatchOutput, CommitRecord, ShardCommit


def record(batch_id: str = "b-1") -> CommitRecord:
    return CommitRecord(
        batch_id=batch_id,
        run_id="run-1",
        stream="s",
        created_at=datetime(2026, 11, 22, 4, 0, tzinfo=UTC),
        shards=(
            ShardCommit("shardId-0", Checkpoint.trim_horizon(), Checkpoint.shard_end(), 3, True),
            ShardCommit("shardId-1", Checkpoint.at("10" * 28, 2), Checkpoint.at("11" * 28), 1, False),
        ),
    )


def stage(output: BatchOutput, batch_id: str = "b-1", rows: int = 3) -> None:
    staging = output.staging(batch_id)
    staging.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"shard_id": ["shardId-0"] * rows}), staging / "part-0.parquet")
    output.write_commit_record(record(batch_id))


def read_root(root: Path) -> dict[str, list[object]]:
    return ds.dataset(root, format="parquet", partitioning="hive").to_table().to_pydict()


def test_staged_output_is_invisible_until_published_then_visible_whole(tmp_path: Path) -> None:
    output = BatchOutput(tmp_path)
    stage(output)
    assert read_root(tmp_path) == {}
    assert output.publish("b-1") is True
    assert read_root(tmp_path) == {"shard_id": ["shardId-0"] * 3, "batch_id": ["b-1"] * 3}
    assert not output.staging("b-1").exists()


def test_publishing_twice_is_a_no_op(tmp_path: Path) -> None:
    output = BatchOutput(tmp_path)
    stage(output)
    assert output.publish("b-1") is True
    assert output.publish("b-1") is False
    assert len(read_root(tmp_path)["shard_id"]) == 3


def test_commit_record_travels_with_the_published_batch(tmp_path: Path) -> None:
    output = BatchOutput(tmp_path)
    stage(output)
    assert output.commit_record("b-1") is None
    output.publish("b-1")
    assert output.commit_record("b-1") == record()
    assert output.published_batches() == ["b-1"]


def test_publish_without_commit_record_is_refused(tmp_path: Path) -> None:
    output = BatchOutput(tmp_path)
    output.staging("b-1").mkdir(parents=True)
    with pytest.raises(InvalidStateError, match="commit record"):
        output.publish("b-1")


def test_discarded_batch_cannot_be_published(tmp_path: Path) -> None:
    output = BatchOutput(tmp_path)
    stage(output)
    assert output.discard("b-1") is True
    assert output.discard("b-1") is False
    with pytest.raises(InvalidStateError):
        output.publish("b-1")
    assert read_root(tmp_path) == {}


def test_publish_and_discard_racing_have_exactly_one_winner(tmp_path: Path) -> None:
    for attempt in range(30):
        output = BatchOutput(tmp_path / str(attempt))
        stage(output)
        published, discarded = _race(output)
        assert [published, discarded].count(True) == 1
        assert output.published("b-1").exists() is published


def _race(output: BatchOutput) -> tuple[bool, bool]:
    """Run publish and discard of batch b-1 at the same moment from two threads."""
    outcome: dict[str, bool] = {}
    barrier = threading.Barrier(2)

    def publish() -> None:
        barrier.wait()
        try:
            outcome["published"] = output.publish("b-1")
        except InvalidStateError:
            outcome["published"] = False

    def discard() -> None:
        barrier.wait()
        outcome["discarded"] = output.discard("b-1")

    threads = [threading.Thread(target=publish), threading.Thread(target=discard)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcome["published"], outcome["discarded"]


def test_unwritable_root_says_so(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with pytest.raises(InvalidStateError, match="not writable"):
        BatchOutput(blocked / "out").check_writable()


def test_commit_record_round_trips_through_json() -> None:
    assert CommitRecord.from_json(record().to_json()) == record()
