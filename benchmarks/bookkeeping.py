"""DynamoDB calls a run makes per shard, by kind: the bookkeeping a run pays for (leases,
checkpoints, history, the ownership mark) beside the records it reads.

    .venv/bin/python -m benchmarks.bookkeeping           # 16 shards, 3 runs of 2,000 records
    .venv/bin/python -m benchmarks.bookkeeping --quick   # 4 shards, 2 runs of 400 (CI)

Each run is a whole catch-up run in this process (list, lease, read on local Spark, publish to a
parquet folder, commit, release) against kinesalite and moto_server; the calls are counted on
the run's DynamoDB client by operation. The first run also creates the tables and the leases;
the later ones are what an hourly schedule pays every hour.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from devkit.stack import STATIC_ENV, local_stack, wait_active

from benchmarks.common import dynamodb_calls, machine, plain_client, put_records


def run_once(stream: str, output: Path, spark: Any, run_id: str, records: int) -> Counter[str]:
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.config import RunConfig
    from kinesis_batch.run import CatchUpRun

    dynamodb = dynamodb_client()
    calls = dynamodb_calls(dynamodb)
    config = RunConfig.of(stream=stream, output=str(output), worker_id=f"bench-{run_id}")
    report = CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb, spark=lambda: spark, run_id=run_id).run()
    assert report.records == records, f"read {report.records} records, put {records}"
    return calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 shards, 2 runs of 400 records (CI)")
    parser.add_argument("--shards", type=int, help="the stream's shards (default 16; --quick 4)")
    parser.add_argument("--runs", type=int, help="runs, each after new records (default 3; --quick 2)")
    args = parser.parse_args(argv)
    shards, runs = args.shards or (4 if args.quick else 16), args.runs or (2 if args.quick else 3)
    records = 400 if args.quick else 2_000
    print(f"# bookkeeping: {machine()}; {shards} shards, {runs} runs of {records:,} records", flush=True)
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as scratch, local_stack(("kinesalite",)) as stack:
        os.environ.update({**STATIC_ENV, **stack.env("kinesalite")})
        from kinesis_batch.spark.session import spark_session

        kinesis = plain_client("kinesis")
        stream = "bench-bookkeeping"
        kinesis.create_stream(StreamName=stream, ShardCount=shards)
        wait_active(kinesis, stream)
        spark = spark_session("local[2]", app_name="kinesis-batch-bench-bookkeeping")
        try:
            counts = []
            for number in range(runs):
                put_records(kinesis, stream, records, first=number * records)
                counts.append(run_once(stream, Path(scratch) / "out", spark, f"run-{number + 1}", records))
        finally:
            spark.session.stop()
    kinds = sorted(set().union(*counts), key=lambda kind: -sum(count[kind] for count in counts))
    print("\n| run | " + " | ".join(kinds) + " | all | per shard |")
    print("|---|" + "---|" * (len(kinds) + 2))
    for number, count in enumerate(counts, 1):
        cells = " | ".join(str(count[kind]) for kind in kinds)
        total = sum(count.values())
        print(f"| {number}{' (first)' if number == 1 else ''} | {cells} | {total} | {total / shards:.2f} |")
    print(f"\nDynamoDB calls per shard: {sum(counts[0].values()) / shards:.2f} the first run, "
          f"{sum(counts[-1].values()) / shards:.2f} a later one (target: at most 4)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
