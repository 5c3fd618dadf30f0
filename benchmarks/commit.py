"""Publishing one batch of many files: the sink's ``publish`` of N staged files, then
``committed(batch_id)`` and ``last_batch()``, for each output, at N = 1,000 and 4,000 files.

    .venv/bin/python -m benchmarks.commit                       # N = 1,000 and 4,000
    .venv/bin/python -m benchmarks.commit --quick               # N = 20 and 80 (what CI runs)
    .venv/bin/python -m benchmarks.commit --outputs delta-s3 --files 1000,2000

A batch of N files is what a run over N shards publishes: one small Parquet file per shard
(10 rows of 1 KiB), written where and as the Spark tasks write them (through the sink's data
place, whole-object), with a commit record of N shards. The outputs: Delta and Iceberg tables,
local and on S3 (moto), and parquet folders (one rename) for reference. Each (output, N) gets a
fresh table; the sizes are measured interleaved, so drift on a shared machine hits them alike.

Only ``publish``, ``committed`` and ``last_batch`` are timed. Staging (a thread pool, as many
tasks would) is reported beside them; afterwards every batch is checked from the output alone:
committed, with all N files in the table and all its rows read back by the format's own reader.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from devkit.stack import STATIC_ENV, local_stack

from benchmarks.common import OUTPUT_KINDS, RECORD_BYTES, machine, open_output, output_args
from kinesis_batch.columns import RAW, ROW_SCHEMA
from kinesis_batch.output import Sink
from kinesis_batch.run import new_run_id
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord, ShardCommit
from kinesis_batch.storage.staged import StagedFile

ROWS_PER_FILE = 10
STAGING_THREADS = 16
APP, STREAM = "bench-commit", "bench-commit-stream"
SEQUENCE = 49680451707726228688800280510064766505084075351574839298
LABELS = {"parquet": "parquet (rename)"}
START = Checkpoint.trim_horizon()


@dataclass(frozen=True)
class Publish:
    kind: str
    files: int
    staging: float
    publish: float
    committed: float
    last_batch: float
    commit_bytes: int  # what the publish wrote besides the data: Delta log entry, Iceberg metadata.json, _commit.json

    def row(self) -> str:
        label = LABELS.get(self.kind, self.kind)
        return (
            f"| {label:<16} | {self.files:>5,} | {self.staging:7.1f} | {self.publish:9.3f} "
            f"| {self.publish / self.files * 1000:7.2f} | {self.committed:13.3f} | {self.last_batch:14.3f} "
            f"| {self.commit_bytes / 1024:10,.0f} |"
        )


COLUMNS = (("output", 16), ("files", 5), ("stage s", 7), ("publish s", 9), ("ms/file", 7))
COLUMNS += (("committed() s", 13), ("last_batch() s", 14), ("commit KiB", 10))
TABLE_HEAD = (
    "| "
    + " | ".join(f"{name:<{width}}" if i == 0 else f"{name:>{width}}" for i, (name, width) in enumerate(COLUMNS))
    + " |\n|"
    + "|".join("-" * (width + 2) for _, width in COLUMNS)
    + "|"
)


def commit_record(batch_id: str, files: int) -> CommitRecord:
    """A run's record over ``files`` shards, each moved from TRIM_HORIZON by ROWS_PER_FILE records."""
    return CommitRecord(
        batch_id=batch_id,
        run_id=batch_id,
        stream=STREAM,
        created_at=datetime.now(UTC),
        shards=tuple(
            ShardCommit(f"shardId-{i:012d}", START, Checkpoint.at(str(SEQUENCE + i)), ROWS_PER_FILE, False)
            for i in range(files)
        ),
    )


def stage(sink: Sink, record: CommitRecord) -> list[StagedFile]:
    """One Parquet file per shard where and as the Spark tasks write it (``part-<shard>-<uuid>``
    through the data place, visible once complete), and the plan manifest."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = ROW_SCHEMA if sink.format == "parquet" else RAW.schema(batch_column=True)  # tasks add batch_id for tables
    data = sink.data(record.batch_id)
    payload = b"x" * (RECORD_BYTES - 16)
    arrived = datetime.now(UTC)

    def write(shard: ShardCommit) -> StagedFile:
        columns: dict[str, list[Any]] = {
            "shard_id": [shard.shard_id] * ROWS_PER_FILE,
            "sequence_number": [str(SEQUENCE + i) for i in range(ROWS_PER_FILE)],
            "sub_sequence_number": [0] * ROWS_PER_FILE,
            "partition_key": [f"key-{i}" for i in range(ROWS_PER_FILE)],
            "data": [f"{i:>15}|".encode() + payload for i in range(ROWS_PER_FILE)],
            "approximate_arrival_timestamp": [arrived] * ROWS_PER_FILE,
            "lineage_depth": [0] * ROWS_PER_FILE,
        }
        if sink.format != "parquet":
            columns["batch_id"] = [record.batch_id] * ROWS_PER_FILE
        name = f"part-{shard.shard_id}-{uuid.uuid4().hex[:12]}.parquet"
        with (
            data.open_part(name) as stream,
            pq.ParquetWriter(stream, schema, use_dictionary=["shard_id", "partition_key"]) as writer,
        ):
            writer.write_table(pa.table(columns, schema=schema))
        return StagedFile(name, ROWS_PER_FILE)

    data.make_dirs()  # as the driver does before the read step (tasks never create folders)
    with ThreadPoolExecutor(STAGING_THREADS) as pool:
        files = list(pool.map(write, record.shards))
    sink.write_manifest(record.batch_id, {"batch": record.batch_id, "shards": len(record.shards)})
    return files


def timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def measure(kind: str, files: int, scratch: Path, *, quiet: bool = False) -> Publish:
    sink = open_output(output_args(kind, scratch, f"{kind}-{files}"), app=APP, stream=STREAM)
    sink.prepare()
    record = commit_record(new_run_id(), files)
    names, staging = timed(lambda: stage(sink, record))
    published, publishing = timed(lambda: sink.publish(record, names))
    if published is not True:
        raise SystemExit(f"{kind}: publish of a fresh batch of {files:,} files returned {published}")
    found, committing = timed(lambda: sink.committed(record.batch_id))
    last, lasting = timed(sink.last_batch)
    if found != record or last is None or last.batch_id != record.batch_id:
        raise SystemExit(f"{kind}: committed() / last_batch() do not give back the batch of {files:,} files")
    in_table, rows = table_contents(sink, record.batch_id)
    if in_table != files or rows != files * ROWS_PER_FILE:
        raise SystemExit(
            f"{kind}: the output holds {in_table:,} files and {rows:,} rows of the batch, "
            f"not {files:,} and {files * ROWS_PER_FILE:,}"
        )
    result = Publish(kind, files, staging, publishing, committing, lasting, commit_bytes(sink, record.batch_id))
    if quiet:
        return result
    print(
        f"{kind}: {files:,} files staged in {staging:.1f} s, published in {publishing:.2f} s; "
        f"committed() {committing:.2f} s, last_batch() {lasting:.2f} s; {in_table:,} files and {rows:,} rows read back",
        flush=True,
    )
    return result


def table_contents(sink: Sink, batch_id: str) -> tuple[int, int]:
    """(files, rows) of the batch, from the output alone: the files the table (or the published
    folder) names, and the rows its format's own reader returns."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    if sink.format == "parquet":
        folder = Path(sink.location(batch_id))
        return len(list(folder.glob("part-*.parquet"))), ds.dataset(folder, format="parquet").count_rows()
    if sink.format == "delta":
        from deltalake import DeltaTable

        root = Place(sink.uri, sink.root.s3)  # type: ignore[attr-defined]
        table = DeltaTable(sink.uri, storage_options=root.s3.object_store_options() if root.on_s3 else None)
        paths = [uri for uri in table.file_uris() if f"/{batch_id}/" in uri]
        dataset = table.to_pyarrow_dataset()
        return len(paths), dataset.count_rows(filter=pc.field("batch_id") == batch_id)
    table = sink.catalog.load_table(sink.identifier)  # type: ignore[attr-defined]
    scan = table.scan(row_filter=f"batch_id == '{batch_id}'")
    return len(list(scan.plan_files())), scan.to_arrow().num_rows


def commit_bytes(sink: Sink, batch_id: str) -> int:
    """Size of what the publish wrote besides the data files: the Delta log entry, the Iceberg
    metadata file the catalog points at now, the parquet folder's _commit.json."""
    if sink.format == "parquet":
        return Path(sink.location(batch_id), "_commit.json").stat().st_size
    if sink.format == "delta":
        root: Place = sink.root  # type: ignore[attr-defined]
        log = root.child("_delta_log").sizes()
        return log[max(name for name in log if name.endswith(".json"))]  # zero-padded: the newest sorts last
    location = sink.catalog.load_table(sink.identifier).metadata_location  # type: ignore[attr-defined]
    folder, _, name = location.rpartition("/")
    return Place(folder, sink.s3).sizes()[name]  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 20 and 80 files (CI)")
    parser.add_argument("--files", help="batch sizes, comma-separated (default 1000,4000; --quick 20,80)")
    parser.add_argument(
        "--outputs",
        default=",".join(OUTPUT_KINDS),
        help=f"comma-separated, of {','.join(OUTPUT_KINDS)} (default: all)",
    )
    args = parser.parse_args(argv)
    sizes = [int(n) for n in (args.files or ("20,80" if args.quick else "1000,4000")).split(",")]
    kinds = [kind for kind in args.outputs.split(",") if kind]
    unknown = set(kinds) - set(OUTPUT_KINDS)
    if unknown:
        parser.error(f"unknown --outputs {', '.join(sorted(unknown))}: choose from {', '.join(OUTPUT_KINDS)}")
    print(f"# commit: {machine()}; load average {os.getloadavg()[0]:.2f}", flush=True)
    results: dict[tuple[str, int], Publish] = {}
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-commit-") as scratch, local_stack(()) as stack:
        url = stack.dynamodb.url  # moto_server: S3 here (and DynamoDB, Glue)
        os.environ.update(
            {**STATIC_ENV, "AWS_ENDPOINT_URL_S3": url, "AWS_ENDPOINT_URL_DYNAMODB": url, "AWS_ENDPOINT_URL_GLUE": url}
        )
        for kind in kinds:  # first imports and connections, not measured
            measure(kind, 2, Path(scratch), quiet=True)
        for files in sizes:
            for kind in kinds:
                results[kind, files] = measure(kind, files, Path(scratch))
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")
    print("\nTimes in s (ms/file: publish per file); commit KiB: the log entry / metadata file the publish wrote")
    print(TABLE_HEAD)
    for files in sizes:
        for kind in kinds:
            print(results[kind, files].row())
    small, large = min(sizes), max(sizes)
    if large > small:
        print(f"\nGrowth, {large:,} files / {small:,} files ({large / small:.0f}x the files):\n")
        print(f"| {'output':<16} | {'publish':>7} | {'committed()':>11} | {'last_batch()':>12} |")
        print(f"|{'-' * 18}|{'-' * 9}|{'-' * 13}|{'-' * 14}|")
        for kind in kinds:
            a, b = results[kind, small], results[kind, large]
            print(
                f"| {LABELS.get(kind, kind):<16} | {b.publish / a.publish:6.2f}x | {b.committed / a.committed:10.2f}x "
                f"| {b.last_batch / a.last_batch:11.2f}x |"
            )
    print(
        f"\ngrowth {large:,} vs {small:,} files, publish: "
        + ", ".join(f"{kind} {results[kind, large].publish / results[kind, small].publish:.2f}x" for kind in kinds)
    )
    print(f"every batch committed with all its files and rows: {len(results)} of {len(results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
