"""Tables that stay fast: DuckDB, a reader from outside our stack, against the same rows in
today's layout and partitioned by event day, before and after ``maintain``.

    .venv/bin/python -m benchmarks.tables                      # 16 shards, 48 hourly runs of 1,000 events
    .venv/bin/python -m benchmarks.tables --quick              # 4 shards, 3 runs of 200 (what CI runs)
    .venv/bin/python -m benchmarks.tables --outputs delta-s3 --runs 24

One stream of JSON events (benchmarks.events, about 1 KiB each, declared by a JSON Schema).
Run ``i`` lands the events of hour ``i`` of a timeline that starts at 10:00 UTC, so 48 runs span
three days (14, 24 and 10 hours). Each output kind (Delta, Iceberg; local and on S3, moto's) is
written by two consumers of the stream, each with its own lease table, run after run:

- **today's layout**: unpartitioned, one file per shard and run (``--partition-by none
  --shards-per-task 1``: what kinesis-batch wrote before partitions and per-task files);
- **by event day**: ``--partition-by day(event_time)``, the tasks' files per partition.

Then, for each: files, MiB, the time of a one-day count (the full middle day, as a user of the
layout writes it: Delta's partition column, else the event time) and of a full scan, with
DuckDB's own ``delta_scan``/``iceberg_scan``; then ``maintain`` on the partitioned table (its
time) and the same figures after it. Every count is checked equal across the three.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from devkit.stack import STATIC_ENV, local_stack

from benchmarks import duck
from benchmarks.common import MIB, machine, open_output, output_args, plain_client
from benchmarks.events import START, event, json_payload, json_schema
from kinesis_batch.config import RunConfig
from kinesis_batch.maintenance import MaintainSettings, maintain
from kinesis_batch.output import Sink
from kinesis_batch.output.datafiles import FileStats

KINDS = ("delta-local", "delta-s3", "iceberg-local", "iceberg-s3")
LAYOUTS = {"today": ("none", 1), "by day": ("day(event_time)", None)}  # --partition-by, --shards-per-task


@dataclass(frozen=True)
class Figures:
    label: str
    files: int
    mib: float
    one_day: duck.Timed
    full: duck.Timed
    maintain_seconds: float | None = None

    def row(self, kind: str) -> str:
        maintained = f"{self.maintain_seconds:.1f}" if self.maintain_seconds is not None else "-"
        return (
            f"| {kind:<13} | {self.label:<29} | {self.files:>5} | {self.mib:>6.1f} | "
            f"{self.one_day.seconds * 1000:>9.1f} | {self.full.seconds * 1000:>9.1f} | {maintained:>10} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 shards, 3 runs of 200 events, local outputs (CI)")
    parser.add_argument("--outputs", help=f"comma-separated, of {','.join(KINDS)} (default all; --quick the local)")
    parser.add_argument("--runs", type=int, help="hourly runs (default 48; --quick 3)")
    parser.add_argument("--shards", type=int, help="the stream's shards (default 16; --quick 4)")
    parser.add_argument("--events", type=int, help="events a run (default 1,000; --quick 200)")
    args = parser.parse_args(argv)
    kinds = (args.outputs or ("delta-local,iceberg-local" if args.quick else ",".join(KINDS))).split(",")
    if set(kinds) - set(KINDS):
        parser.error(f"--outputs: choose from {', '.join(KINDS)}")
    runs, shards = args.runs or (3 if args.quick else 48), args.shards or (4 if args.quick else 16)
    events = args.events or (200 if args.quick else 1_000)
    print(f"# tables: {machine()}; {shards} shards, {runs} runs of {events:,} events", flush=True)
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as scratch, local_stack(("kinesalite",)) as stack:
        os.environ.update({**STATIC_ENV, **stack.env("kinesalite")})
        from kinesis_batch.spark.session import spark_session

        spark = spark_session("local[2]", app_name="kinesis-batch-bench-tables")
        try:
            results = land_and_measure(Path(scratch), kinds, runs, shards, events, spark)
        finally:
            spark.session.stop()
    print(f"\n| {'output':<13} | {'layout':<29} | files |    MiB | 1 day, ms | scan, ms | maintain s |")
    print("|---|---|---|---|---|---|---|")
    for kind, figures in results.items():
        for measured in figures:
            print(measured.row(kind))
    for kind, (today, _, after) in results.items():
        share = f"{today.one_day.rows:,} of {today.full.rows:,} rows"
        faster = today.one_day.seconds / after.one_day.seconds
        print(
            f"{kind}: one-day count ({share}) {faster:.1f}x faster by event day after maintain than in today's "
            f"layout; full scan {today.full.seconds / after.full.seconds:.1f}x; {today.files} files -> {after.files}"
        )
    return 0


def land_and_measure(
    scratch: Path, kinds: list[str], runs: int, shards: int, events: int, spark: Any
) -> dict[str, tuple[Figures, Figures, Figures]]:
    kinesis = plain_client("kinesis")
    stream = f"tables-{int(time.time())}"
    kinesis.create_stream(StreamName=stream, ShardCount=shards)
    kinesis.get_waiter("stream_exists").wait(StreamName=stream)
    schema = scratch / "events.schema.json"
    schema.write_text(json.dumps(json_schema()))
    consumers = {
        (kind, layout): consumer(scratch, kind, layout, stream, schema) for kind in kinds for layout in LAYOUTS
    }
    started = time.monotonic()
    for hour in range(runs):
        put_hour(kinesis, stream, hour, events)
        for config in consumers.values():
            report = run(config, spark)
            assert report.published and report.records == events, (config.output, report.records)
        print(f"run {hour + 1} of {runs} landed into {len(consumers)} outputs ({time.monotonic() - started:.0f} s)")
    results = {}
    day = (START + timedelta(hours=runs // 2)).date()  # the day of the timeline's middle (48 runs: a whole one)
    connection = duck.connect()
    for kind in kinds:
        today = sink_of(consumers[(kind, "today")], stream)
        by_day = sink_of(consumers[(kind, "by day")], stream)
        column = "event_time_day" if kind.startswith("delta") else None
        before = measure(connection, "today's layout", today, day, None)
        partitioned = measure(connection, "by event day, before maintain", by_day, day, column)
        began = time.monotonic()
        maintain(by_day, MaintainSettings())
        seconds = time.monotonic() - began
        after = measure(connection, "by event day, after maintain", by_day, day, column, seconds)
        for figures in (partitioned, after):
            same = (figures.one_day.rows, figures.full.rows) == (before.one_day.rows, before.full.rows)
            assert same, f"{kind}: not the same rows ({figures} against {before})"
        assert before.full.rows == runs * events, f"{kind}: {before.full.rows} rows, {runs * events} put"
        assert before.one_day.rows > 0, f"{kind}: no event on {day}"
        results[kind] = (before, partitioned, after)
        print(f"{kind} measured", flush=True)
    return results


def consumer(scratch: Path, kind: str, layout: str, stream: str, schema: Path) -> RunConfig:
    partition_by, per_task = LAYOUTS[layout]
    name = f"{kind}-{layout}".replace(" ", "-")
    options = dict(zip(*[iter(output_args(kind, scratch, name.replace("-", "")))] * 2, strict=True))
    return RunConfig.of(
        stream=stream,
        output=options["--output"],
        format=options["--format"],
        catalog=options.get("--catalog"),
        table=f"bench-{name}",
        read_limits="none",
        shards_per_task=per_task,
        partition_by=partition_by,
        decode="json",
        schema=str(schema),
    )


def put_hour(kinesis: Any, stream: str, hour: int, events: int) -> None:
    """``events`` events of hour ``hour`` of the timeline, over every shard."""
    first = hour * events
    spacing_ms = 3_600_000 // events
    for start in range(0, events, 500):
        batch = []
        for i in range(first + start, first + min(start + 500, events)):
            payload = json.loads(json_payload(i))
            moment = START + timedelta(hours=hour, milliseconds=spacing_ms * (i - first))
            payload["event_time"] = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            batch.append({"Data": json.dumps(payload).encode(), "PartitionKey": str(event(i)["event_id"])})
        assert kinesis.put_records(StreamName=stream, Records=batch)["FailedRecordCount"] == 0


def run(config: RunConfig, spark: Any) -> Any:
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.run import CatchUpRun

    return CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark).run()


def sink_of(config: RunConfig, stream: str) -> Sink:
    args = (
        "--format",
        config.format,
        "--output",
        config.output,
        *(("--catalog", config.catalog) if config.catalog else ()),
    )
    return open_output(args, app=config.table, stream=stream)


def measure(
    connection: Any, label: str, sink: Sink, day: date, column: str | None, seconds: float | None = None
) -> Figures:
    stats = FileStats.of(sink.data_files())
    one_day, full = duck.one_day(connection, sink, day, column), duck.full_scan(connection, sink)
    return Figures(label, stats.files, stats.bytes / MIB, one_day, full, seconds)


if __name__ == "__main__":
    raise SystemExit(main())
