"""Against Kinesis' own limit: ``kinesis-batch run`` (paced, as on AWS) through a local endpoint
that enforces the per-shard read limits (kinesis_batch.limits_proxy: 5 GetRecords calls/s and
2 MiB/s per shard, throttling beyond, 10 MiB / 10,000 records per call, 5-minute iterators).

    .venv/bin/python -m benchmarks.read_limit            # 4 shards x 40 MiB
    .venv/bin/python -m benchmarks.read_limit --quick    # 2 shards x 8 MiB (CI)

Reports each shard's sustained read rate as a fraction of 2 MiB/s and the share of throttled
calls. Every shard gets a task slot of its own (``local[shards]``): paced reads wait, they do
not compute, so slots, not cores, bound them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchmarks.common import MIB, kinesis_batch_run, machine, plain_client, put_records
from kinesis_batch.devstack import local_stack, wait_active
from kinesis_batch.limits_proxy import BYTES_PER_SECOND, LimitsProxy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 shards x 8 MiB (CI)")
    args = parser.parse_args(argv)
    shards, per_shard = (2, 8_000) if args.quick else (4, 40_000)
    print(f"# read limit: {machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as scratch, local_stack(("kinesalite",)) as stack:
        os.environ.update(stack.env("kinesalite"))
        kinesis = plain_client("kinesis")
        stream = f"limit-{int(time.time())}"
        kinesis.create_stream(StreamName=stream, ShardCount=shards)
        wait_active(kinesis, stream)
        put_records(kinesis, stream, shards * per_shard)
        with LimitsProxy(stack.kinesis["kinesalite"].url) as proxy:
            os.environ["AWS_ENDPOINT_URL_KINESIS"] = proxy.url
            with_startup, _, report = kinesis_batch_run(
                stream, Path(scratch) / "out", read_limits="kinesis", extra=("--spark-master", f"local[{shards}]")
            )
            stats = proxy.stats()
    print(f"\n{report['records']:,} records of 1 KiB in {with_startup.seconds:.1f} s; timings {report['timings']}")
    print("\n| shard | MiB read | GetRecords calls | throttled | sustained rate | of 2 MiB/s |")
    print("|---|---|---|---|---|---|")
    for shard, shard_stats in sorted(stats.items()):
        rate = shard_stats.sustained_rate() or 0.0
        print(
            f"| {shard} | {shard_stats.bytes / MIB:.1f} | {shard_stats.calls} | {shard_stats.throttled} "
            f"| {rate / MIB:.2f} MiB/s | {rate / BYTES_PER_SECOND:.2f} |"
        )
    calls = sum(s.calls for s in stats.values())
    throttled = sum(s.throttled for s in stats.values())
    rates = [s.sustained_rate() or 0.0 for s in stats.values()]
    print(
        f"\nper-shard rate: {min(rates) / BYTES_PER_SECOND:.2f} to {max(rates) / BYTES_PER_SECOND:.2f} of the limit; "
        f"throttled calls: {throttled} of {calls} ({throttled / max(calls, 1):.1%})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
