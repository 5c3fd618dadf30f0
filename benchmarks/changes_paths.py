"""The two paths benchmarks.changes compares, the changes it feeds them and what it measures of
them (see that module): kinesis-batch's tasks and publish (:class:`Ours`), and the users' land
raw, then fold and merge job (:class:`Theirs`)."""

from __future__ import annotations

import io
import json
import random
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from kinesis_batch.aws import s3_settings
from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.decoding.pipeline import Pipeline
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.landing import Landing
from kinesis_batch.output import Output, Sink
from kinesis_batch.output.records import CommitRecord, ShardCommit
from kinesis_batch.run import new_run_id
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.model import Record
from kinesis_batch.spark.files import TaskFiles

SETTINGS = ChangeSettings.parse("upsert", key="id", sequence_by="version", delete_when="deleted=true")
SPEC = DecodeSpec(DecodeSettings(decode="json"), changes=SETTINGS)
FIELDS = ["id", "version", "name", "amount", "deleted"]
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
    """The changes sent and the state they leave: each change one version newer than any before."""

    def __init__(self, rows: int, rng: random.Random) -> None:
        self.rows, self.rng = rows, rng
        self.live: list[int] = []
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
                made.append(self._upsert(self.live[self.rng.randrange(len(self.live))]))
            else:
                made.append(self._delete())
        return made

    def expected(self) -> dict[int, int]:
        return dict(self.versions)

    def _new_key(self) -> int:
        key, self.next_id = self.next_id, self.next_id + 1
        self.live.append(key)
        return key

    def _upsert(self, key: int) -> Record:
        self.version += 1
        self.versions[key] = self.version
        body = {"id": key, "version": self.version, "name": f"item {key} v{self.version}", "amount": self.version / 100}
        return self._record(key, {**body, "deleted": False})

    def _delete(self) -> Record:
        index = self.rng.randrange(len(self.live))
        key = self.live[index]
        self.live[index] = self.live[-1]
        self.live.pop()
        self.version += 1
        del self.versions[key]
        return self._record(key, {"id": key, "version": self.version, "deleted": True})

    def _record(self, key: int, body: dict[str, Any]) -> Record:
        self.sequence += 1
        data = json.dumps(body).encode()
        return Record(f"shardId-{key % SHARDS:012d}", str(self.sequence), 0, str(key), data, datetime.now(UTC))


class Ours:
    """kinesis-batch: the tasks' pipeline and files, then the sink's publish (the merge)."""

    def __init__(self, kind: str, args: tuple[str, ...]) -> None:
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
        return _read(self.sink, FIELDS)

    def current_versions(self) -> dict[int, int]:
        return _versions(_read(self.sink, ["id", "version"]))


class Theirs:
    """The users' path: land the records raw, then a job that folds them and merges."""

    def __init__(self, kind: str, args: tuple[str, ...]) -> None:
        options = dict(zip(args[::2], args[1::2], strict=True))
        self.format, self.target = options["--format"], options["--output"]
        self.s3 = s3_settings()
        if self.format == "iceberg":
            from kinesis_batch.output.catalogs import load_catalog

            self.catalog = load_catalog(options.get("--catalog"), self.s3)
        self.batches = 0

    def load(self, rows: pa.Table) -> None:
        if self.format == "delta":
            from deltalake import write_deltalake

            write_deltalake(self.target, rows, storage_options=self._options())
            return
        self.catalog.create_namespace_if_not_exists(self.target.split(".")[0])
        for name, schema in ((self.target, rows.schema), (self.target + "_landing", LANDING)):
            self.catalog.create_table(name, schema=schema)
        self.catalog.load_table(self.target).append(rows)

    def timed_apply(self, records: list[Record]) -> float:
        started = time.monotonic()
        self.batches += 1
        raw = pa.table(
            {
                "shard_id": [r.shard_id for r in records],
                "sequence_number": [r.sequence_number for r in records],
                "data": [r.data for r in records],
                "batch": pa.array([self.batches] * len(records), pa.int64()),
            },
            schema=LANDING,
        )
        self._land(raw)
        changes = pa_json.read_json(io.BytesIO(b"\n".join(self._landed(self.batches).column("data").to_pylist())))
        self._merge(_newest(changes))
        return time.monotonic() - started

    def current_versions(self) -> dict[int, int]:
        if self.format == "delta":
            from deltalake import DeltaTable

            table = DeltaTable(self.target, storage_options=self._options()).to_pyarrow_table(columns=["id", "version"])
        else:
            table = self.catalog.load_table(self.target).scan(selected_fields=("id", "version")).to_arrow()
        return _versions(table)

    def _options(self) -> dict[str, str] | None:
        return self.s3.object_store_options() if self.target.startswith("s3://") else None

    def _land(self, raw: pa.Table) -> None:
        if self.format == "delta":
            from deltalake import write_deltalake

            write_deltalake(self.target + "_landing", raw, mode="append", storage_options=self._options())
        else:
            self.catalog.load_table(self.target + "_landing").append(raw)

    def _landed(self, batch: int) -> pa.Table:
        if self.format == "delta":
            from deltalake import DeltaTable

            landing = DeltaTable(self.target + "_landing", storage_options=self._options())
            return landing.to_pyarrow_table(columns=["data"], filters=[("batch", "=", batch)])
        return self.catalog.load_table(self.target + "_landing").scan(row_filter=f"batch == {batch}").to_arrow()

    def _merge(self, newest: pa.Table) -> None:
        upserts = newest.filter(pc.invert(newest.column("deleted")))
        if self.format == "delta":
            from deltalake import DeltaTable

            table = DeltaTable(self.target, storage_options=self._options())
            source = newest.select(FIELDS).cast(pa.schema(table.schema().to_arrow()))  # type: ignore[arg-type]
            (
                table.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all(predicate="s.deleted = false AND s.version > t.version")
                .when_matched_delete(predicate="s.deleted = true AND s.version > t.version")
                .when_not_matched_insert_all(predicate="s.deleted = false")
                .execute()
            )
            return
        from pyiceberg.expressions import In

        table = self.catalog.load_table(self.target)
        with table.transaction() as transaction:
            transaction.delete(In("id", newest.column("id").to_pylist()))
            transaction.append(upserts.select(FIELDS).cast(table.schema().as_arrow()))


LANDING = pa.schema(
    [("shard_id", pa.string()), ("sequence_number", pa.string()), ("data", pa.binary()), ("batch", pa.int64())]
)


def _newest(changes: pa.Table) -> pa.Table:
    """Each id's change of the greatest version."""
    ordered = changes.sort_by([("id", "ascending"), ("version", "descending")])
    ids = ordered.column("id").combine_chunks()
    first = pc.not_equal(ids.slice(1), ids.slice(0, len(ids) - 1)) if len(ids) > 1 else pa.array([], pa.bool_())
    keep = pa.concat_arrays([pa.array([True]), first]) if len(ids) else pa.array([], pa.bool_())
    kept = ordered.filter(keep)
    if "name" not in kept.schema.names:  # a batch of deletes only
        kept = kept.append_column("name", pa.nulls(kept.num_rows, pa.string()))
    if "amount" not in kept.schema.names:
        kept = kept.append_column("amount", pa.nulls(kept.num_rows, pa.float64()))
    return kept


def _read(sink: Sink, columns: list[str]) -> pa.Table:
    if sink.format == "delta":
        return sink._load().to_pyarrow_table(columns=columns)  # type: ignore[attr-defined]
    table = sink.catalog.load_table(sink.identifier)  # type: ignore[attr-defined]
    return table.scan(selected_fields=tuple(columns)).to_arrow()


def _versions(table: pa.Table) -> dict[int, int]:
    return dict(zip(table.column("id").to_pylist(), table.column("version").to_pylist(), strict=True))


@dataclass
class Peak:
    """The greatest resident set size seen, and how far above the block's start it was."""

    start: int = 0
    bytes: int = 0
    running: bool = True
    thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def growth(self) -> int:
        return self.bytes - self.start


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no VmRSS in /proc/self/status: this benchmark measures memory on Linux only")


@contextmanager
def peak_rss(every: float = 0.02) -> Iterator[Peak]:
    """The greatest resident set size of this process while the block runs (sampled)."""
    peak = Peak(start=rss(), bytes=rss())

    def sample() -> None:
        while peak.running:
            peak.bytes = max(peak.bytes, rss())
            time.sleep(every)

    peak.thread = threading.Thread(target=sample, daemon=True)
    peak.thread.start()
    try:
        yield peak
    finally:
        peak.running = False
        peak.thread.join()


__all__ = ["BatchResult", "Changes", "Ours", "Theirs", "peak_rss"]
