"""The marker archive: a commit's marker read from its metadata, kept whole under the consumer's
name, and ``_latest.json`` that only moves forwards."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from kinesis_batch.output.markers import LATEST, Marker, MarkerArchive
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord, ShardCommit

RECORD = CommitRecord(
    "b-1", "r-1", "orders", datetime(2026, 11, 29, tzinfo=UTC),
    (ShardCommit("shardId-0", Checkpoint.trim_horizon(), Checkpoint.at("42"), 3, False),),
)  # fmt: skip


def metadata(action: str, batch: str = "b-1") -> dict[str, str]:
    return {
        "kinesis_batch.action": action,
        "kinesis_batch.batch_id": batch,
        "kinesis_batch.app": "orders-consumer",
        "kinesis_batch.stream": "orders",
        **({"kinesis_batch.commit_record": RECORD.to_json()} if action == "publish" else {}),
        "engineInfo": "delta-rs",  # the format's own keys are not ours
    }


def test_a_publish_or_discard_of_ours_is_a_marker_and_anything_else_is_not() -> None:
    published = Marker.of(metadata("publish"), 1_000)
    assert published is not None and published.record() == RECORD
    assert (published.app, published.stream, published.committed_at_ms) == ("orders-consumer", "orders", 1_000)
    discarded = Marker.of(metadata("discard"), 2_000)
    assert discarded is not None and discarded.action == "discard" and discarded.record() is None
    assert Marker.of(metadata("optimize"), 3_000) is None, "a maintenance commit marks no batch"
    assert Marker.of({"kinesis_batch.action": "publish"}, 3_000) is None, "no batch named"
    assert Marker.of({}, 3_000) is None


def test_an_archived_marker_reads_back_whole_under_its_consumer(tmp_path: Path) -> None:
    bookkeeping = Place(str(tmp_path))
    mine, theirs = MarkerArchive(bookkeeping, "orders-consumer"), MarkerArchive(bookkeeping, "other-consumer")
    marker = Marker.of(metadata("publish"), 1_000)
    assert marker is not None
    mine.put(marker)
    mine.put(marker)  # a fact: writing it again is harmless
    assert mine.get("b-1") == marker and Marker.from_json(marker.to_json()) == marker
    assert mine.archived() == {"b-1"} and theirs.archived() == set() and theirs.get("b-1") is None
    assert json.loads((tmp_path / "_markers" / "orders-consumer" / "b-1.json").read_text())["action"] == "publish"


def test_the_latest_marker_only_moves_forwards_and_only_to_a_publish(tmp_path: Path) -> None:
    archive = MarkerArchive(Place(str(tmp_path)), "c")

    def marker(batch: str, at: int, action: str = "publish") -> Marker:
        made = Marker.of(metadata(action, batch), at)
        assert made is not None
        return made

    archive.keep_latest([marker("b-1", 10), marker("b-3", 30, "discard")])
    assert archive.latest() == marker("b-1", 10), "a discard is no batch's latest"
    archive.keep_latest([marker("b-2", 20), marker("b-0", 5)])
    assert archive.latest() == marker("b-2", 20)
    archive.keep_latest([marker("b-0", 5)])  # an older one, found later (a table's history read again)
    assert archive.latest() == marker("b-2", 20)
    assert LATEST not in {f"{b}.json" for b in archive.archived()}
