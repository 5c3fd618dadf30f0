"""Typed landing beside raw landing, part of ``benchmarks.throughput`` (``--typed``).

For each encoding of :mod:`benchmarks.events` (JSON with a JSON Schema, Avro in the Glue Schema
Registry's format, Protobuf with a descriptor set), a backlog of that encoding with a split and
a merge in its history is landed twice by ``kinesis-batch run`` into parquet folders, each with
a lease table of its own: raw (``--decode raw``) and typed. For JSON, users' own path is
measured too: the raw landing, then a PySpark ``from_json`` job over it (:mod:`benchmarks.from_json`).

Each landing is made once for each way of parsing GetRecords pages asked for (``readers``:
``KINESIS_BATCH_READER``, kinesis_batch.shards.page), on the same backlog.

Per run: its time with and without start-up, the CPU seconds of its process tree per GiB of
payload landed, and the peak resident memory of its largest Python worker (the Spark task).
Every run is checked: every record a row (no dead letters), every ``event_time`` a timestamp.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import MIB, REPO, RUN, backlog_with_split_and_merge, plain_client
from benchmarks.events import encodings
from benchmarks.processes import watched
from kinesis_batch.shards.page import READER_ENV

GIB = 1024 * MIB


@dataclass(frozen=True)
class Measured:
    """One process run: ``seconds`` in all, ``working`` without start-up (kinesis-batch: read,
    publish and commit; the users' job: the job after its session started)."""

    records: int
    payload_bytes: int
    seconds: float
    working: float
    cpu_seconds: float
    worker_peak: int

    @property
    def cpu_per_gib(self) -> float:
        return self.cpu_seconds / (self.payload_bytes / GIB)


@dataclass(frozen=True)
class TypedRow:
    """One encoding at one size: raw and typed landing, and users' path (JSON only)."""

    encoding: str
    reader: str
    raw: Measured
    typed: Measured
    users_job: Measured | None

    def row(self) -> str:
        raw, typed = self.raw, self.typed
        return (
            f"| {self.encoding:<8} | {self.reader:<8} | {raw.records:>9,} | {raw.payload_bytes / raw.records:>5,.0f} "
            f"| {raw.seconds:6.1f} | {typed.seconds:6.1f} | {raw.records / raw.working:>9,.0f} "
            f"| {typed.records / typed.working:>9,.0f} | **{raw.working / typed.working:.2f}** "
            f"| {raw.seconds / typed.seconds:.2f} | {raw.cpu_per_gib:6.0f} | {typed.cpu_per_gib:6.0f} "
            f"| {raw.worker_peak / MIB:5.0f} | {typed.worker_peak / MIB:5.0f} |"
        )

    def users_line(self) -> str:
        if self.users_job is None:
            return ""
        users = self.raw.seconds + self.users_job.seconds
        return (
            f"{self.encoding}, {self.raw.records:,} records: users' path = raw landing {self.raw.seconds:.1f} s + "
            f"from_json job {self.users_job.seconds:.1f} s (the job alone {self.users_job.working:.1f} s, "
            f"{self.users_job.cpu_per_gib:.0f} CPU s/GiB) = {users:.1f} s; typed landing {self.typed.seconds:.1f} s "
            f"= {self.typed.seconds / users:.2f} of it"
        )


TYPED_HEAD = (
    "| decode   | reader   |   records |  B/rec |  raw s | typed s | raw rec/s ex. | typed rec/s ex. | typed/raw ex. "
    "| typed/raw | CPU s/GiB raw | CPU s/GiB typed | worker MiB raw | worker MiB typed |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def measure_typed(
    records: int, scratch: Path, names: tuple[str, ...], readers: tuple[str, ...] = ("fast",)
) -> list[TypedRow]:
    """Each of ``names`` (json, avro, protobuf) at ``records``, landed by each of ``readers``,
    printed as it finishes."""
    kinesis = plain_client("kinesis")
    schemas = scratch / f"schemas-{records}"
    schemas.mkdir(parents=True, exist_ok=True)
    codes = encodings(schemas, plain_client("glue"))
    rows = []
    for name in names:
        stream = f"typed-{name}-{records}-{int(time.time())}"
        took = time.monotonic()
        size = backlog_with_split_and_merge(kinesis, stream, records, payload=codes[name].payload)
        print(f"backlog: {records:,} {name} records, {size / records:,.0f} B each on average, "
              f"put in {time.monotonic() - took:.1f} s", flush=True)  # fmt: skip
        for reader in readers:
            env = {READER_ENV: reader}
            raw_root = scratch / f"raw-{name}-{records}-{reader}"
            raw = _landing(stream, raw_root, ("--table", f"{stream}-raw-{reader}"), records, size, env)
            typed_root = scratch / f"typed-{name}-{records}-{reader}"
            flags = ("--table", f"{stream}-typed-{reader}", *codes[name].flags)
            typed = _landing(stream, typed_root, flags, records, size, env)
            _check_typed(typed_root, records)
            users = None
            if name == "json" and reader == readers[0]:  # the users' job reads files: the same either way
                users = _users_job(raw_root, scratch / f"users-{name}-{records}", records, size)
            row = TypedRow(name, reader, raw, typed, users)
            print(f"{row.row()}\n{row.users_line()}".rstrip(), flush=True)
            rows.append(row)
        kinesis.delete_stream(StreamName=stream)  # the emulator keeps every record in memory
    return rows


def _landing(stream: str, root: Path, extra: tuple[str, ...], records: int, size: int, env: dict[str, str]) -> Measured:
    command = [*RUN, "--stream", stream, "--output", str(root), "--read-limits", "none", "--json", *extra]
    seconds, tree, out = watched(command, REPO, env)
    report = json.loads(out)
    if report["records"] != records or report.get("dead_letters", 0) or report.get("rows", records) != records:
        landed = f"{report.get('rows')} rows, {report.get('dead_letters')} dead letters ({report.get('reasons')})"
        raise SystemExit(f"{' '.join(extra)}: {report['records']:,} records read, {landed}; not {records:,} rows")
    timings = report["timings"]
    working = timings["read"] + timings["publish"] + timings["commit"]
    return Measured(records, size, seconds, working, tree.cpu_seconds, tree.peak("python worker"))


def _users_job(raw_root: Path, out: Path, records: int, size: int) -> Measured:
    seconds, tree, printed = watched([sys.executable, "-m", "benchmarks.from_json", str(raw_root), str(out)], REPO)
    _check_typed(out, records, hive=False)
    job = json.loads(printed.strip().splitlines()[-1])
    return Measured(records, size, seconds, job["job_seconds"], tree.cpu_seconds, tree.peak("python worker"))


def _check_typed(root: Path, records: int, *, hive: bool = True) -> None:
    """Every record is a row, and every row's ``event_time`` a timestamp (not text, not null)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    dataset: Any = ds.dataset(str(root), format="parquet", partitioning="hive" if hive else None)
    times = dataset.to_table(columns=["event_time"]).column("event_time")
    if len(times) != records or times.null_count or not pa.types.is_timestamp(times.type):
        raise SystemExit(
            f"{root}: {len(times):,} rows of {records:,}, event_time {times.type}, {times.null_count} null"
        )


__all__ = ["TYPED_HEAD", "Measured", "TypedRow", "measure_typed"]
