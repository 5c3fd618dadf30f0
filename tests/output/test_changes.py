"""A table of current state's publish, batch by batch as the tasks stage them. A batch discarded
under its publish is fenced. Batches of more
keys than the Delta look-up lists by name (it reads them by the batch's key range, then keeps
the batch's keys), with a one-column key and a two-column one whose first column many keys
share (Iceberg deletes by it and appends the other rows it caught again), end in exactly the
state the changes leave."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import LeaseLostError
from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.decoding.pipeline import Pipeline
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.landing import Landing
from kinesis_batch.output import Output, Sink
from kinesis_batch.output.changes import LISTED
from kinesis_batch.output.records import CommitRecord, ShardCommit
from kinesis_batch.output.staged import StagedFile
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.model import Record
from kinesis_batch.spark.files import TaskFiles
from tests.output.support import output_args, read_rows

KINDS = [("delta", "local"), ("iceberg", "local")]
KEYS = LISTED * 3  # past the look-up's list
SEQUENCE = 49680451707726228688800280510064766505084075351574839298


class Batches:
    """Batches of changes staged as the Spark tasks stage them, then published."""

    def __init__(self, sink: Sink, settings: ChangeSettings) -> None:
        self.sink, self.settings, self.sequence, self.batches = sink, settings, SEQUENCE, 0

    def publish(self, bodies: list[dict[str, Any]]) -> None:
        assert self.sink.publish(*self.stage(bodies)) is True

    def stage(self, bodies: list[dict[str, Any]]) -> tuple[CommitRecord, list[StagedFile]]:
        self.batches += 1
        batch_id = f"batch-{self.batches}"
        by_shard: dict[str, list[Record]] = defaultdict(list)
        for body in bodies:
            self.sequence += 1
            shard = f"shardId-{body['id'] % 2:012d}"
            data = json.dumps(body).encode()
            by_shard[shard].append(Record(shard, str(self.sequence), 0, str(body["id"]), data, datetime.now(UTC)))
        data_place = self.sink.data(batch_id)
        data_place.make_dirs()
        spec = DecodeSpec(DecodeSettings(decode="json"), changes=self.settings)
        shards = []
        with TaskFiles(data_place, "t", self.sink.file_layout(64 * 2**20), schemas=True) as files:
            for shard_id, records in sorted(by_shard.items()):
                pipeline = Pipeline(spec, shard_id=shard_id, depth=0, batch_id=batch_id)
                done = pipeline.page(records)
                assert done.dead is None and done.rows is not None
                files.write(done.rows)
                landing = Landing(rows=pipeline.counts.rows, changes=dict(pipeline.counts.changes))
                end = Checkpoint.at(records[-1].sequence_number)
                start = Checkpoint.trim_horizon()
                shards.append(ShardCommit(shard_id, start, end, len(records), False, landing=landing))
        return CommitRecord(batch_id, batch_id, "s", datetime.now(UTC), tuple(shards)), files.files


@pytest.mark.parametrize("key", [("id",), ("region", "id")], ids=["one-column", "two-column"])
@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_batches_of_more_keys_than_the_look_up_lists_end_in_the_state_the_changes_leave(
    format: str, where: str, key: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = ChangeSettings.parse("upsert", key=",".join(key), sequence_by="version", delete_when="deleted=true")
    args = output_args(format, where, tmp_path, monkeypatch)
    options = dict(zip(args[::2], args[1::2], strict=True))
    sink = Output(format, options["--output"], options.get("--catalog")).open(app="a", stream="s", changes=settings)
    sink.prepare()
    batches = Batches(sink, settings)

    def body(i: int, version: int, **more: Any) -> dict[str, Any]:
        return {"id": i, "region": "eu" if i % 3 else "us", "version": version, "deleted": False, **more}

    first = [body(i, 1) for i in range(KEYS)]
    batches.publish(first)
    # Every other key updated (with a new field), every fifth deleted, as many new keys inserted,
    # one key changed twice in the batch, the newer change first, and one by a change older than
    # the table's row (which only the look-up of the table's rows knows to ignore).
    second = [body(i, 2, note="second") for i in range(0, KEYS, 2)]
    second += [body(i, 3, deleted=True) for i in range(0, KEYS, 5)]
    second += [body(i, 2) for i in range(KEYS, 2 * KEYS)] + [body(1, 5), body(1, 4), body(3, 0)]
    batches.publish(second)

    newest: dict[int, dict[str, Any]] = {}
    for change in first + second:
        held = newest.get(change["id"])
        if held is None or change["version"] > held["version"]:
            newest[change["id"]] = change
    live = {i: change["version"] for i, change in newest.items() if not change["deleted"]}
    rows = read_rows(sink)
    assert len(rows["id"]) == len(live), "a key twice, or a deleted one"
    assert dict(zip(rows["id"], rows["version"], strict=True)) == live


@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_a_batch_discarded_between_the_publishs_check_and_its_merge_is_fenced_not_a_missing_file(
    format: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = ChangeSettings.parse("upsert", key="id", sequence_by="version")
    args = output_args(format, where, tmp_path, monkeypatch)
    options = dict(zip(args[::2], args[1::2], strict=True))
    output = Output(format, options["--output"], options.get("--catalog"))
    late, other = (output.open(app="a", stream="s", changes=settings) for _ in range(2))
    late.prepare()
    record, files = Batches(late, settings).stage([{"id": i, "version": 1} for i in range(10)])
    checked = late._unpublished  # type: ignore[attr-defined]

    def then_discarded(table: Any, batch_id: str) -> bool:  # another worker's discard lands right after
        unpublished = checked(table, batch_id)
        assert other.discard(batch_id) is True
        return bool(unpublished)

    monkeypatch.setattr(late, "_unpublished", then_discarded)
    with pytest.raises(LeaseLostError, match="discarded"):
        late.publish(record, files)
    assert read_rows(late) == {}
