"""The README's first command: the catch-up job end to end on the embedded defaults.

Starts moto_server (DynamoDB) and kinesalite (Kinesis) on free loopback ports, creates a stream
with a split and a merge in its history, runs ``kinesis-batch run`` on local Spark, prints
``kinesis-batch status`` and where the Parquet went (read back with pyarrow), runs again to
show that only new data is read, and stops the servers.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from kinesis_batch import cli
from kinesis_batch.aws import kinesis_client
from kinesis_batch.devstack import local_stack
from kinesis_batch.shards.listing import list_shards

STREAM = "demo-clicks"


def main() -> int:
    started = time.monotonic()
    output = Path(os.environ.get("KINESIS_BATCH_DEMO_OUTPUT") or tempfile.mkdtemp(prefix="kinesis-batch-demo-"))
    with local_stack(("kinesalite",)) as stack:
        os.environ.update(stack.env("kinesalite"))
        print(f"local endpoints: DynamoDB {stack.dynamodb.url}, Kinesis {stack.kinesis['kinesalite'].url}")
        kinesis = kinesis_client()
        sent = _seed_stream(kinesis)
        print(f"stream {STREAM}: {sent} records; 3 shards, then a split and a merge\n")

        print(f"$ kinesis-batch run --stream {STREAM} --output {output}", flush=True)
        if cli.main(["run", "--stream", STREAM, "--output", str(output)]) != 0:
            return 1
        print(f"\n$ kinesis-batch status --stream {STREAM}")
        cli.main(["status", "--stream", STREAM])

        more = _put(kinesis, sent, 1000)
        print(f"\n{more} more records arrive; $ kinesis-batch run --stream {STREAM} --output {output}", flush=True)
        if cli.main(["run", "--stream", STREAM, "--output", str(output)]) != 0:
            return 1

        counts = _read_back(output)
        duplicates = sum(n - 1 for n in counts.values() if n > 1)
        print(f"\noutput: {output} ({len(list(output.glob('batch_id=*')))} batches of Parquet)")
        rows = sum(counts.values())
        print(f"read back with pyarrow: {rows} rows for {sent + more} records put, {duplicates} duplicates")
        print(f"demo done in {time.monotonic() - started:.1f} s; servers stopped")
        return 0 if rows == sent + more and duplicates == 0 else 1


def _seed_stream(kinesis) -> int:  # type: ignore[no-untyped-def]
    kinesis.create_stream(StreamName=STREAM, ShardCount=3)
    _wait_active(kinesis)
    count = _put(kinesis, 0, 3000)
    first, second, third = sorted(list_shards(kinesis, STREAM), key=lambda s: s.starting_hash_key)
    middle = (first.starting_hash_key + first.ending_hash_key + 1) // 2
    kinesis.split_shard(StreamName=STREAM, ShardToSplit=first.shard_id, NewStartingHashKey=str(middle))
    _wait_active(kinesis)
    kinesis.merge_shards(StreamName=STREAM, ShardToMerge=second.shard_id, AdjacentShardToMerge=third.shard_id)
    _wait_active(kinesis)
    return count + _put(kinesis, count, 3000)


def _put(kinesis, start: int, count: int) -> int:  # type: ignore[no-untyped-def]
    for first in range(start, start + count, 500):
        batch = [{"Data": f"event-{i}".encode(), "PartitionKey": f"user-{i % 97}"} for i in range(first, first + 500)]
        kinesis.put_records(StreamName=STREAM, Records=batch)
    return count


def _wait_active(kinesis) -> None:  # type: ignore[no-untyped-def]
    while kinesis.describe_stream_summary(StreamName=STREAM)["StreamDescriptionSummary"]["StreamStatus"] != "ACTIVE":
        time.sleep(0.05)


def _read_back(output: Path) -> Counter[bytes]:
    import pyarrow.dataset as ds

    table = ds.dataset(output, format="parquet", partitioning="hive").to_table(columns=["data"])
    return Counter(table.column("data").to_pylist())


if __name__ == "__main__":
    sys.exit(main())
