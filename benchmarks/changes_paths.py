"""What benchmarks.changes feeds and measures (see that module): the changes, kinesis-batch's
path (the tasks' pipeline and files, then the publish: :class:`Ours`) and a batch's figures.
The users' path is benchmarks.changes_theirs."""

from __future__ import annotations

import json
import random
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from benchmarks.changes_theirs import FIELDS, versions
from kinesis_batch.aws import s3_settings
from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.decoding.pipeline import Pipeline
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.landing import Landing
from kinesis_batch.output import Output, Sink
from kinesis_batch.run import new_run_id
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.model import Record
from kinesis_batch.spark.files import TaskFiles
from kinesis_batch.storage.records import CommitRecord, ShardCommit

SETTINGS = ChangeSettings.parse("upsert", key="id", sequence_by="version", delete_when="deleted=true")
SPEC = DecodeSpec(DecodeSettings(decode="json"), changes=SETTINGS)
SHARDS, PAGE, TARGET_BYTES = 4, 10_000, 128 * 1024 * 1024
FIRST_SEQUENCE = 49680451707726228688800280510064766505084075351574839298


@dataclass(frozen=True)
class BatchResult:
    kind: str
    rows: int  # in the table before the batch, about
    changes: int
    ours: float
    theirs: float
    written: int  # bytes of data files our merge's commit added
    rss: int  # peak RSS of this process while ours ran
    growth: int  # how far that peak was above the RSS when ours began

    def line(self) -> str:
        return (
            f"{self.kind} N={self.rows:,}: {self.changes:,} changes, ours {self.ours:.2f} s, "
            f"theirs {self.theirs:.2f} s ({self.ours / self.theirs:.2f}), {self.written / 2**20:,.1f} MiB written, "
            f"peak RSS {self.rss / 2**20:,.0f} MiB (+{self.growth / 2**20:,.0f})"
        )


class Changes:
    """The changes sent and the state they leave: each change one version newer than any before.
    ``recent``: updates and deletes pick among the newest ``recent`` keys made (0: any live key)."""

    def __init__(self, rows: int, rng: random.Random, *, recent: int = 0) -> None:
        self.rows, self.rng, self.recent = rows, rng, recent
        self.live: list[int] = []
        self.at: dict[int, int] = {}  # key -> its index in live
        self.versions: dict[int, int] = {}
        self.version = self.next_id = 0
        self.sequence = FIRST_SEQUENCE

    def initial(self, chunk: int) -> Iterator[list[Record]]:
        """The table's first ``rows`` keys, inserted ``chunk`` at a time."""
        for first in range(0, self.rows, chunk):
            yield [self._upsert(self._new_key()) for _ in range(min(chunk, self.rows - first))]

    def batch(self, size: int) -> list[Record]:
        """80% updates of live keys, 10% inserts, 10% deletes, in random order."""
        kinds = ["update"] * (size * 8 // 10) + ["insert"] * (size // 10)
        kinds += ["delete"] * (size - len(kinds))
        self.rng.shuffle(kinds)
        made = []
        for kind in kinds:
            if kind == "insert":
                made.append(self._upsert(self._new_key()))
            elif kind == "update":
                made.append(self._upsert(self._pick()))
            else:
                made.append(self._delete(self._pick()))
        return made

    def expected(self) -> dict[int, int]:
        return dict(self.versions)

    def _pick(self) -> int:
        if not self.recent:
            return self.live[self.rng.randrange(len(self.live))]
        while True:
            key = self.rng.randrange(max(0, self.next_id - self.recent), self.next_id)
            if key in self.at:
                return key

    def _new_key(self) -> int:
        key, self.next_id = self.next_id, self.next_id + 1
        self.at[key] = len(self.live)
        self.live.append(key)
        return key

    def _upsert(self, key: int) -> Record:
        self.version += 1
        self.versions[key] = self.version
        body = {"id": key, "version": self.version, "name": f"item {key} v{self.version}", "amount": self.version / 100}
        return self._record(key, {**body, "deleted": False})

    def _delete(self, key: int) -> Record:
        index, last = self.at.pop(key), self.live.pop()
        if last != key:  # the last key takes the deleted one's place
            self.live[index], self.at[last] = last, index
        self.version += 1
        del self.versions[key]
        return self._record(key, {"id": key, "version": self.version, "deleted": True})

    def _record(self, key: int, body: dict[str, Any]) -> Record:
        self.sequence += 1
        data = json.dumps(body).encode()
        return Record(f"shardId-{key % SHARDS:012d}", str(self.sequence), 0, str(key), data, datetime.now(UTC))


class Ours:
    """kinesis-batch: the tasks' pipeline and files, then the sink's publish (the merge)."""

    def __init__(self, args: tuple[str, ...]) -> None:
        options = dict(zip(args[::2], args[1::2], strict=True))
        output = Output(options["--format"], options["--output"], options.get("--catalog"))
        self.sink: Sink = output.open(app="bench-changes", stream="s", s3=s3_settings(), changes=SETTINGS)
        self.sink.prepare()

    def timed_apply(self, records: list[Record]) -> tuple[float, int]:
        """Seconds from records to committed merge, and bytes of the data files it added."""
        before = {file.path for file in self.sink.data_files()}
        started = time.monotonic()
        self.apply(records)
        seconds = time.monotonic() - started
        return seconds, sum(file.bytes for file in self.sink.data_files() if file.path not in before)

    def apply(self, records: list[Record]) -> None:
        batch_id = new_run_id()
        data = self.sink.data(batch_id)
        data.make_dirs()
        by_shard: dict[str, list[Record]] = defaultdict(list)
        for record in records:
            by_shard[record.shard_id].append(record)
        shards = []
        with TaskFiles(data, "bench", self.sink.file_layout(TARGET_BYTES), schemas=True) as files:
            for shard_id, group in sorted(by_shard.items()):
                pipeline = Pipeline(SPEC, shard_id=shard_id, depth=0, batch_id=batch_id)
                for first in range(0, len(group), PAGE):
                    done = pipeline.page(group[first : first + PAGE])
                    if done.rows is not None:
                        files.write(done.rows)
                counts = pipeline.counts
                landing = Landing(rows=counts.rows, changes=dict(counts.changes), key=counts.key)
                end = Checkpoint.at(group[-1].sequence_number)
                shards.append(ShardCommit(shard_id, Checkpoint.trim_horizon(), end, len(group), False, landing=landing))
        record = CommitRecord(batch_id, batch_id, "s", datetime.now(UTC), tuple(shards))
        if self.sink.publish(record, files.files) is not True:
            raise SystemExit(f"{self.sink.uri}: the publish of batch {batch_id} did not commit")

    def current(self) -> pa.Table:
        return read_table(self.sink, FIELDS)

    def current_versions(self) -> dict[int, int]:
        return versions(read_table(self.sink, ["id", "version"]))


def read_table(sink: Sink, columns: list[str]) -> pa.Table:
    if sink.format == "delta":
        return sink._load().to_pyarrow_table(columns=columns)  # type: ignore[attr-defined]
    table = sink.catalog.load_table(sink.identifier)  # type: ignore[attr-defined]
    return table.scan(selected_fields=tuple(columns)).to_arrow()


__all__ = ["BatchResult", "Changes", "Ours", "read_table"]
