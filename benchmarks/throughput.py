"""Catch-up throughput against the source's own rate and a hand-written baseline, on one
kinesalite endpoint (fast, and it reshards like AWS).

    .venv/bin/python -m benchmarks.throughput            # 200,000 records, then 1,000,000
    .venv/bin/python -m benchmarks.throughput --quick    # 20,000 records (what CI runs)
    .venv/bin/python -m benchmarks.throughput --formats parquet,delta-s3
    .venv/bin/python -m benchmarks.throughput --only-typed --typed json

A backlog of 1 KiB records across 8 open shards with one split and one merge in its history is
drained three ways in the same run, at each size: (a) raw threaded GetRecords, records
discarded; (b) a hand-written single-threaded loop into one Parquet file; (c) ``kinesis-batch
run`` end to end, with and without its fixed start-up cost. Each size's ratios are to its own
raw rate. The break-even backlog is where (c) including start-up overtakes (b).

Then the first backlog is drained again by ``kinesis-batch run`` into each output of
``--formats`` (default all: parquet, delta-local, delta-s3, iceberg-local, iceberg-s3; S3 is
moto's), each run with a lease table of its own; the parquet row is run (c) itself. Per format:
the rate with and without start-up and the run report's timings (spark_start, read, publish,
commit).

Then typed landing beside raw landing at each size (``--typed``, default json, avro and protobuf;
``--quick``: json), :mod:`benchmarks.typed`: the rate of each, the CPU seconds per GiB, the
Python worker's peak memory, and for JSON users' own path (raw, then a ``from_json`` job).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devkit.stack import local_stack

from benchmarks.common import (
    OUTPUT_KINDS,
    TABLE_HEAD,
    Drain,
    backlog_with_split_and_merge,
    hand_written,
    kinesis_batch_run,
    machine,
    output_args,
    plain_client,
    raw_read,
)
from benchmarks.typed import GIB, TYPED_HEAD, TypedRow, measure_typed
from kinesis_batch.shards.page import READERS

STEPS = ("spark_start", "read", "publish", "commit")
WIDTHS = {step: max(len(step), 7) for step in STEPS}


@dataclass(frozen=True)
class FormatRun:
    """``kinesis-batch run`` into one kind of output: with and without start-up, and its timings."""

    kind: str
    with_startup: Drain
    without: Drain
    timings: dict[str, float]
    shards: int  # in the batch's commit record (each that read records wrote one file)

    def row(self) -> str:
        steps = " | ".join(f"{self.timings.get(step, 0.0):{WIDTHS[step]}.2f}" for step in STEPS)
        drained = self.with_startup
        return (
            f"| {self.kind:<13} | {drained.records:>9,} | {self.shards:>6} | {drained.seconds:6.1f} "
            f"| {drained.rate:>9,.0f} | {self.without.rate:>9,.0f} | {steps} |"
        )


FORMAT_HEAD = (
    f"| {'output':<13} | {'records':>9} | {'shards':>6} | {'s':>6} | {'rec/s':>9} | {'rec/s ex.':>9} | "
    + " | ".join(f"{step:>{WIDTHS[step]}}" for step in STEPS)
    + " |\n"
    + f"|{'-' * 15}|{'-' * 11}|{'-' * 8}|{'-' * 8}|{'-' * 11}|{'-' * 11}|"
    + "|".join("-" * (WIDTHS[step] + 2) for step in STEPS)
    + "|"
)


def format_run(kind: str, drained: tuple[Drain, Drain, dict[str, Any]]) -> FormatRun:
    with_startup, without, report = drained
    return FormatRun(kind, with_startup, without, report["timings"], len(report["shards"]))


def measure(records: int, scratch: Path, *, formats: tuple[str, ...] = ()) -> list[Drain]:
    """(a), (b) and (c) on a new backlog of ``records``; then (c) again into each of ``formats``
    (printed as they finish; the parquet one is (c) itself)."""
    stream = f"bench-{records}-{int(time.time())}"
    kinesis = plain_client("kinesis")
    took = time.monotonic()
    backlog_with_split_and_merge(kinesis, stream, records)
    print(f"backlog: {records:,} records of 1 KiB put in {time.monotonic() - took:.1f} s", flush=True)
    drains = [raw_read(stream), hand_written(stream, scratch / f"hand-{records}")]
    parquet = kinesis_batch_run(stream, scratch / f"kb-{records}")
    with_startup, without, report = parquet
    drains += [with_startup, without]
    print(f"kinesis-batch timings (s): {report['timings']}", flush=True)
    for drain in drains:
        if drain.records != records:
            raise SystemExit(f"{drain.name} drained {drain.records:,} records, not {records:,}")
    runs = [format_run("parquet", parquet)] if "parquet" in formats else []
    for kind in (k for k in formats if k != "parquet"):
        output = output_args(kind, scratch, f"{kind}-{records}")
        run = format_run(kind, kinesis_batch_run(stream, output, extra=("--table", f"bench-{kind}-{stream}")))
        print(f"kinesis-batch into {kind}: timings (s) {run.timings}", flush=True)
        if run.with_startup.records != records:
            raise SystemExit(f"kinesis-batch into {kind} drained {run.with_startup.records:,} records, not {records:,}")
        runs.append(run)
    if runs:
        print(f"\n{records:,} records into each output (s: including start-up; ex.: read + publish + commit)")
        print(FORMAT_HEAD)
        for run in runs:
            print(run.row())
        print("", flush=True)
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
    parser.add_argument(
        "--formats",
        default=",".join(OUTPUT_KINDS),
        help=f"outputs drained into at the first backlog, comma-separated (default: all of {','.join(OUTPUT_KINDS)}; "
        "'' for none)",
    )
    parser.add_argument("--typed", help="encodings landed typed beside raw (default json,avro,protobuf; --quick json)")
    parser.add_argument("--only-typed", action="store_true", help="the typed landings only")
    parser.add_argument(
        "--readers",
        default=",".join(READERS),
        help=f"the typed landings' ways of parsing GetRecords pages (default {','.join(READERS)}; --quick fast)",
    )
    args = parser.parse_args(argv)
    readers = ("fast",) if args.quick else tuple(r for r in args.readers.split(",") if r)
    if set(readers) - set(READERS) or not readers:
        parser.error(f"--readers {args.readers}: choose from {', '.join(READERS)}")
    records = args.records or (20_000 if args.quick else 200_000)
    typed = tuple(name for name in (args.typed or ("json" if args.quick else "json,avro,protobuf")).split(",") if name)
    if set(typed) - {"json", "avro", "protobuf"}:
        parser.error(f"--typed {args.typed}: choose from json, avro, protobuf")
    formats = tuple(kind for kind in args.formats.split(",") if kind)
    unknown = set(formats) - set(OUTPUT_KINDS)
    if unknown:
        parser.error(f"unknown --formats {', '.join(sorted(unknown))}: choose from {', '.join(OUTPUT_KINDS)}")
    print(f"# throughput: {machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as scratch, local_stack(("kinesalite",)) as stack:
        os.environ.update(stack.env("kinesalite"))
        sizes = (records,) if args.quick else (records, 1_000_000)
        rounds = [] if args.only_typed else [measure(size, Path(scratch), formats=formats if size == records else ())
                                             for size in sizes]  # fmt: skip
        typed_rounds = [measure_typed(size, Path(scratch), typed, readers) for size in sizes] if typed else []
    if rounds:
        raw_summary(rounds)
    if typed_rounds:
        typed_summary(typed_rounds)
    return 0


def raw_summary(rounds: list[list[Drain]]) -> None:
    print(f"\n{TABLE_HEAD}")
    for drains in rounds:
        for drain in drains:
            print(drain.row(drains[0]))
    for drains in rounds:
        raw, baseline, with_startup, without = drains
        startup = with_startup.seconds - without.seconds
        even = break_even(baseline, startup, without)
        print(
            f"\n{without.records:,} records: kinesis-batch / raw = {without.rate / raw.rate:.2f} without start-up "
            f"({with_startup.rate / raw.rate:.2f} with); / hand-written = {with_startup.rate / baseline.rate:.2f} "
            f"with start-up; fixed start-up {startup:.1f} s; break-even backlog "
            + (f"{even:,.0f} records" if even else "none (not faster per record)")
        )


def typed_summary(rounds: list[list[TypedRow]]) -> None:
    """The typed rows of every size, users' path for JSON, and the worker's memory as the backlog grows."""
    print("\nTyped landing beside raw landing, the same records (ex.: read + publish + commit; CPU s per GiB of "
          "payload; worker: the largest Python worker's peak)")  # fmt: skip
    print(TYPED_HEAD)
    for rows in rounds:
        for row in rows:
            print(row.row())
    for rows in rounds:
        for row in rows:
            if row.users_job is not None:
                print(row.users_line())
    if len(rounds) > 1:
        first, last = rounds[0], rounds[-1]
        print("CPU s per GiB at the margin (the larger run's CPU beyond the smaller's, per GiB more; start-up "
              "cancels out):")  # fmt: skip
        for a, b in zip(first, last, strict=True):
            more = (b.raw.payload_bytes - a.raw.payload_bytes) / GIB
            print(f"  {a.encoding} {a.reader}: raw {(b.raw.cpu_seconds - a.raw.cpu_seconds) / more:.1f}, "
                  f"typed {(b.typed.cpu_seconds - a.typed.cpu_seconds) / more:.1f}")  # fmt: skip
        ratios = ", ".join(
            f"{a.encoding} {a.reader} raw {b.raw.worker_peak / a.raw.worker_peak:.2f} "
            f"typed {b.typed.worker_peak / a.typed.worker_peak:.2f}"
            for a, b in zip(first, last, strict=True)
        )
        print(f"Python worker peak at {last[0].raw.records:,} / at {first[0].raw.records:,} records: {ratios}")


if __name__ == "__main__":
    raise SystemExit(main())
