"""What the benchmarks share: a local stack, a backlog with a split and a merge in its history,
the three ways of draining it, and fresh outputs of every format (local and S3 on moto).

Figures are printed side by side from one run: absolute times on a shared machine drift, the
ratios between approaches measured together hold.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from devkit.stack import wait_active

if TYPE_CHECKING:
    from kinesis_batch.output import Sink

REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
RECORD_BYTES = 1024
RUN = (sys.executable, "-m", "kinesis_batch.cli", "run")


@dataclass(frozen=True)
class Drain:
    """One way of draining the backlog, measured."""

    name: str
    records: int
    data_bytes: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def mib_per_second(self) -> float:
        return self.data_bytes / MIB / self.seconds

    def row(self, reference: Drain | None = None) -> str:
        share = f"{self.rate / reference.rate:5.2f}" if reference else "    -"
        return (
            f"| {self.name:<44} | {self.records:>9,} | {self.seconds:7.1f} | {self.rate:>9,.0f} "
            f"| {self.mib_per_second:6.1f} | {share} |"
        )


TABLE_HEAD = (
    f"| {'approach':<44} | {'records':>9} | {'s':>7} | {'rec/s':>9} | {'MiB/s':>6} | {'x raw':>5} |\n"
    f"|{'-' * 46}|{'-' * 11}|{'-' * 9}|{'-' * 11}|{'-' * 8}|{'-' * 7}|"
)


#: The outputs the format benchmarks compare: each table format locally and on S3 (moto's),
#: and parquet folders (local only: S3 has no rename) for reference.
OUTPUT_KINDS = ("parquet", "delta-local", "delta-s3", "iceberg-local", "iceberg-s3")


def output_args(kind: str, scratch: Path, name: str) -> tuple[str, ...]:
    """``--format``/``--output`` (and ``--catalog``) of a fresh output of ``kind`` named ``name``.

    S3 kinds get a bucket of their own on the stack's moto (``AWS_ENDPOINT_URL_S3``). Iceberg
    kinds get a SQLite catalog configured the way pyiceberg users do it, in
    ``PYICEBERG_CATALOG__*`` variables of this process (so ``kinesis-batch run`` children see it).
    """
    if kind not in OUTPUT_KINDS:
        raise SystemExit(f"unknown output kind {kind!r}: one of {', '.join(OUTPUT_KINDS)}")
    format, _, where = kind.partition("-")
    if format == "parquet":
        return ("--format", "parquet", "--output", str(scratch / f"parquet-{name}"))
    bucket = ""
    if where == "s3":
        bucket = f"bench-{name}".lower().replace("_", "-")[:63]
        boto3.client("s3").create_bucket(Bucket=bucket)  # type: ignore[call-overload]
    if format == "delta":
        root = f"s3://{bucket}/tables/{name}" if where == "s3" else str(scratch / f"delta-{name}")
        return ("--format", "delta", "--output", root)
    catalog = "".join(c for c in f"bench{name}".lower() if c.isalnum())  # pyiceberg lower-cases env names
    warehouse = f"s3://{bucket}/warehouse" if where == "s3" else f"file://{scratch}/warehouse-{name}"
    for key, value in {
        "TYPE": "sql",
        "URI": f"sqlite:///{scratch}/catalog-{catalog}.db",
        "WAREHOUSE": warehouse,
    }.items():
        os.environ[f"PYICEBERG_CATALOG__{catalog.upper()}__{key}"] = value
    return ("--format", "iceberg", "--output", f"bench.t{catalog}", "--catalog", catalog)


def open_output(args: tuple[str, ...], *, app: str, stream: str) -> Sink:
    """The sink ``output_args`` describes, as ``kinesis-batch run`` would open it."""
    from kinesis_batch.aws import s3_settings
    from kinesis_batch.output import open_sink

    options = dict(zip(args[::2], args[1::2], strict=True))
    return open_sink(
        options["--format"],
        options["--output"],
        app=app,
        stream=stream,
        catalog=options.get("--catalog"),
        s3=s3_settings(),
    )


def machine() -> str:
    return (
        f"{platform.node()} ({os.cpu_count()} cores, Python {platform.python_version()}), {datetime.now(UTC):%Y-%m-%d}"
    )


def plain_client(service: str) -> Any:
    """A plain boto3 client (what a user's own script has): default retries and parsers."""
    return boto3.client(service)  # type: ignore[call-overload]


def dynamodb_calls(client: Any) -> Counter[str]:
    """Every call ``client`` (a DynamoDB client) makes from now on, counted by operation name."""
    calls: Counter[str] = Counter()
    client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.update([model.name]))
    return calls


def filler(i: int) -> bytes:
    """Record ``i`` of the raw benchmarks: RECORD_BYTES, its number first."""
    return f"{i:>15}|".encode() + b"x" * (RECORD_BYTES - 16)


def put_records(
    kinesis: Any,
    stream: str,
    count: int,
    *,
    first: int = 0,
    threads: int = 4,
    hash_keys: Sequence[str] = (),
    payload: Callable[[int], bytes] = filler,
) -> int:
    """``count`` records (``payload(i)``) over 1,000 partition keys, 500 per PutRecords call; with
    ``hash_keys``, record i goes to ``hash_keys[i % len(hash_keys)]`` (e.g. one per shard: every
    shard gets the same backlog). Returns the payloads' bytes."""

    def route(i: int) -> dict[str, str]:
        return {"ExplicitHashKey": hash_keys[i % len(hash_keys)]} if hash_keys else {}

    def put_batch(start: int) -> int:
        batch = [
            {"Data": payload(i), "PartitionKey": f"key-{i % 1000}", **route(i)}
            for i in range(start, min(start + 500, first + count))
        ]
        size = sum(len(entry["Data"]) for entry in batch)
        while batch:
            response = kinesis.put_records(StreamName=stream, Records=batch)
            batch = [r for r, result in zip(batch, response["Records"], strict=True) if "ErrorCode" in result]
        return size

    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(put_batch, range(first, first + count, 500)))


def even_backlog(kinesis: Any, stream: str, shards: int, records: int, payload: Callable[[int], bytes] = filler) -> int:
    """A stream of ``shards`` shards and ``records`` records spread evenly over them (the same
    backlog in every shard: a read's span is then its design's, not the largest shard's).
    Returns the payloads' bytes."""
    from kinesis_batch.shards.listing import list_shards

    kinesis.create_stream(StreamName=stream, ShardCount=shards)
    wait_active(kinesis, stream)
    starts = [str(shard.starting_hash_key) for shard in list_shards(kinesis, stream)]
    return put_records(kinesis, stream, records, hash_keys=starts, payload=payload)


def backlog_with_split_and_merge(
    kinesis: Any, stream: str, records: int, shards: int = 8, payload: Callable[[int], bytes] = filler
) -> int:
    """``shards`` open shards at the end, ``shards + 3`` in the history (one split, one merge);
    records put in three phases so parents and children all hold data. Returns the payloads' bytes."""
    from kinesis_batch.shards.listing import list_shards

    kinesis.create_stream(StreamName=stream, ShardCount=shards)
    wait_active(kinesis, stream)
    third = records // 3
    size = put_records(kinesis, stream, third, payload=payload)
    ordered = sorted(list_shards(kinesis, stream), key=lambda s: s.starting_hash_key)
    low = ordered[0]
    kinesis.split_shard(
        StreamName=stream,
        ShardToSplit=low.shard_id,
        NewStartingHashKey=str((low.starting_hash_key + low.ending_hash_key + 1) // 2),
    )
    wait_active(kinesis, stream)
    size += put_records(kinesis, stream, third, first=third, payload=payload)
    kinesis.merge_shards(
        StreamName=stream, ShardToMerge=ordered[-2].shard_id, AdjacentShardToMerge=ordered[-1].shard_id
    )
    wait_active(kinesis, stream)
    return size + put_records(kinesis, stream, records - 2 * third, first=2 * third, payload=payload)


def shard_ids(kinesis: Any, stream: str) -> list[str]:
    ids: list[str] = []
    for page in kinesis.get_paginator("list_shards").paginate(StreamName=stream):
        ids.extend(s["ShardId"] for s in page["Shards"])
    return ids


def _drain_shard(kinesis: Any, stream: str, shard_id: str) -> Iterator[dict[str, Any]]:
    """A plain GetRecords loop: to the end of a closed shard, or the tip of an open one."""
    iterator = kinesis.get_shard_iterator(StreamName=stream, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    while iterator:
        page = kinesis.get_records(ShardIterator=iterator, Limit=10_000)
        yield from page["Records"]
        if not page["Records"] and page.get("MillisBehindLatest", 0) == 0:
            return
        iterator = page.get("NextShardIterator")


def raw_read(stream: str, threads: int = 8) -> Drain:
    """(a) The source's own rate: threaded GetRecords over every shard, records discarded."""
    kinesis = plain_client("kinesis")
    started = time.monotonic()

    def count(shard_id: str) -> tuple[int, int]:
        records = size = 0
        for record in _drain_shard(kinesis, stream, shard_id):
            records += 1
            size += len(record["Data"])
        return records, size

    with ThreadPoolExecutor(threads) as pool:
        counted = list(pool.map(count, shard_ids(kinesis, stream)))
    return Drain(
        f"(a) raw GetRecords, {threads} threads", *map(sum, zip(*counted, strict=True)), time.monotonic() - started
    )


def hand_written(stream: str, output: Path) -> Drain:
    """(b) What a user writes without this project: one thread, every row in lists, one Parquet file."""
    started = time.monotonic()
    import pyarrow as pa
    import pyarrow.parquet as pq

    kinesis = plain_client("kinesis")
    columns: dict[str, list[Any]] = {"shard_id": [], "sequence_number": [], "partition_key": [], "data": [], "at": []}
    for shard_id in shard_ids(kinesis, stream):
        for record in _drain_shard(kinesis, stream, shard_id):
            columns["shard_id"].append(shard_id)
            columns["sequence_number"].append(record["SequenceNumber"])
            columns["partition_key"].append(record["PartitionKey"])
            columns["data"].append(record["Data"])
            columns["at"].append(record["ApproximateArrivalTimestamp"])
    output.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), output / "backlog.parquet")
    size = sum(len(d) for d in columns["data"])
    return Drain("(b) hand-written: 1 thread, one pyarrow file", len(columns["data"]), size, time.monotonic() - started)


def kinesis_batch_run(
    stream: str, output: Path | tuple[str, ...], *, read_limits: str = "none", extra: tuple[str, ...] = ()
) -> tuple[Drain, Drain, dict[str, Any]]:
    """(c) ``kinesis-batch run`` as a user runs it (a new process: imports, Spark start-up and
    all), and the same run without its fixed start-up cost (the read waves, publish and commit).
    ``output``: a parquet folder, or the ``--format``/``--output``/``--catalog`` arguments of
    :func:`output_args`. Returns both and the run's JSON report."""
    where = output if isinstance(output, tuple) else ("--output", str(output))
    started = time.monotonic()
    done = subprocess.run(
        [*RUN, "--stream", stream, *where, "--read-limits", read_limits, "--json", *extra],
        capture_output=True,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"kinesis-batch run failed ({done.returncode}): {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    records = report["records"]
    size = records * RECORD_BYTES
    timings = report["timings"]
    working = timings.get("read", 0.0) + timings.get("publish", 0.0) + timings.get("commit", 0.0)
    return (
        Drain("(c) kinesis-batch run, including start-up", records, size, seconds),
        Drain("(c) kinesis-batch run, start-up excluded", records, size, working),
        report,
    )
