"""Catch-up throughput against the source's own rate and a hand-written baseline, on one
kinesalite endpoint (fast, and it reshards like AWS).

    .venv/bin/python -m benchmarks.throughput            # 200,000 records, then (b) and (c) at 1,000,000
    .venv/bin/python -m benchmarks.throughput --quick    # 20,000 records (what CI runs)

A backlog of 1 KiB records across 8 open shards with one split and one merge in its history is
drained three ways in the same run: (a) raw threaded GetRecords, records discarded; (b) a
hand-written single-threaded loop into one Parquet file; (c) ``kinesis-batch run`` end to end,
with and without its fixed start-up cost. The break-even backlog is where (c) including start-up
overtakes (b).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchmarks.common import (
    TABLE_HEAD,
    Drain,
    backlog_with_split_and_merge,
    hand_written,
    kinesis_batch_run,
    machine,
    plain_client,
    raw_read,
)
from kinesis_batch.devstack import local_stack


def measure(records: int, scratch: Path, *, with_raw: bool = True) -> list[Drain]:
    stream = f"bench-{records}-{int(time.time())}"
    kinesis = plain_client("kinesis")
    took = time.monotonic()
    backlog_with_split_and_merge(kinesis, stream, records)
    print(f"backlog: {records:,} records of 1 KiB put in {time.monotonic() - took:.1f} s", flush=True)
    drains = [raw_read(stream)] if with_raw else []
    drains.append(hand_written(stream, scratch / f"hand-{records}"))
    with_startup, without, report = kinesis_batch_run(stream, scratch / f"kb-{records}")
    drains += [with_startup, without]
    print(f"kinesis-batch timings (s): {report['timings']}", flush=True)
    for drain in drains:
        if drain.records != records:
            raise SystemExit(f"{drain.name} drained {drain.records:,} records, not {records:,}")
    return drains


def break_even(baseline: Drain, startup_seconds: float, working: Drain) -> float | None:
    """Backlog size where kinesis-batch including start-up takes as long as the baseline:
    n / b = s + n / w  ->  n = s / (1/b - 1/w); None when kinesis-batch is not faster per record."""
    per_record_gain = 1 / baseline.rate - 1 / working.rate
    return startup_seconds / per_record_gain if per_record_gain > 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 records, no 1,000,000 round (CI)")
    parser.add_argument("--records", type=int, help="backlog size (default 200,000; --quick 20,000)")
    args = parser.parse_args(argv)
    records = args.records or (20_000 if args.quick else 200_000)
    print(f"# throughput: {machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as scratch, local_stack(("kinesalite",)) as stack:
        os.environ.update(stack.env("kinesalite"))
        rounds = [measure(records, Path(scratch))]
        if not args.quick:
            rounds.append(measure(1_000_000, Path(scratch), with_raw=False))
    raw = rounds[0][0]
    print(f"\n{TABLE_HEAD}")
    for drains in rounds:
        for drain in drains:
            print(drain.row(raw))
    for drains in rounds:
        baseline, with_startup, without = drains[-3], drains[-2], drains[-1]
        startup = with_startup.seconds - without.seconds
        even = break_even(baseline, startup, without)
        print(
            f"\n{without.records:,} records: kinesis-batch / raw = {without.rate / raw.rate:.2f} without start-up "
            f"({with_startup.rate / raw.rate:.2f} with); / hand-written = {with_startup.rate / baseline.rate:.2f} "
            f"with start-up; fixed start-up {startup:.1f} s; break-even backlog "
            + (f"{even:,.0f} records" if even else "none (not faster per record)")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
