"""One stream, many tables (``--route-by``): the same backlog of typed JSON events drained by
``kinesis-batch run`` into one Delta table on S3 (moto), then routed into 1, 20 and 100 tables
of a template, each run with a lease table of its own. Prints each run's rate and timings, the
20-table run's time against the 1-table run's (the target: at most 1.5x), and the publish
step's time for 1, 20 and 100 tables.

    .venv/bin/python -m benchmarks.routed                       # 200,000 events
    .venv/bin/python -m benchmarks.routed --records 1000000
    .venv/bin/python -m benchmarks.routed --quick               # 20,000 events, 1 and 20 tables (CI)

The events are benchmarks.events' (about 1.1 KiB of JSON each) with three route fields added:
``one`` (a single value), ``kind`` (20 values) and ``kind100`` (100 values), evenly spread.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from devkit.stack import local_stack

from benchmarks.common import backlog_with_split_and_merge, kinesis_batch_run, machine, output_args, plain_client
from benchmarks.events import json_payload

#: (row, --route-by, tables): the same events each time.
RUNS = (("unrouted", None, 1), ("1 table", "one", 1), ("20 tables", "kind", 20), ("100 tables", "kind100", 100))


def payload(i: int) -> bytes:
    routes = {"one": "events", "kind": f"kind{i % 20:02d}", "kind100": f"kind{i % 100:03d}"}
    return json.dumps(json.loads(json_payload(i)) | routes).encode()


@dataclass(frozen=True)
class Routed:
    name: str
    tables: int
    records: int
    seconds: float  # read, publish and commit: start-up excluded
    timings: dict[str, float]
    files: int  # the tables' data files (the dead letters' left out)

    def row(self, one: Routed | None) -> str:
        ratio = f"{self.seconds / one.seconds:.2f}" if one else "-"
        steps = " | ".join(
            f"{self.timings.get(step, 0.0):.2f}" for step in ("spark_start", "read", "publish", "commit")
        )
        rate = self.records / self.seconds
        return f"| {self.name} | {self.tables} | {self.records:,} | {rate:,.0f} | {ratio} | {self.files:,} | {steps} |"


def measure(records: int, scratch: Path, runs: tuple[tuple[str, str | None, int], ...] = RUNS) -> list[Routed]:
    kinesis = plain_client("kinesis")
    stream = f"routed-{int(time.time())}"
    backlog_with_split_and_merge(kinesis, stream, records, payload=payload)
    print(f"{records:,} events put", flush=True)
    done = []
    for name, route_by, tables in runs:
        tag = name.replace(" ", "")
        args = list(output_args("delta-s3", scratch, f"r{tag}{records}"))
        routing: tuple[str, ...] = ()
        if route_by:
            args[args.index("--output") + 1] += "/{route}"
            routing = ("--route-by", route_by, "--max-new-tables", str(tables))
        extra = ("--decode", "json", "--table", f"bench-routed-{tag}-{records}", *routing)
        _, working, report = kinesis_batch_run(stream, tuple(args), extra=extra)
        landed = report.get("tables") or {}
        if route_by and len(landed) != tables:
            raise SystemExit(f"{name}: {len(landed)} tables got rows, not {tables}")
        if report.get("rows") != records:
            raise SystemExit(f"{name}: {report.get('rows')} rows of {records} events")
        files = data_files(args[args.index("--output") + 1])
        done.append(Routed(name, tables, working.records, working.seconds, report["timings"], files))
        print(f"{name}: drained", flush=True)
    return done


def data_files(output: str) -> int:
    """The Parquet files under the tables of ``output`` (an s3:// table or template), bookkeeping
    and dead letters left out."""
    bucket, _, key = output.removeprefix("s3://").partition("/")
    prefix = key.split("{route}")[0]
    pages = plain_client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
    return sum(k.endswith(".parquet") and "/_" not in k.removeprefix(prefix) for k in keys)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 events, into 1 and 20 tables only (CI)")
    parser.add_argument("--records", type=int, help="backlog size (default 200,000; --quick 20,000)")
    args = parser.parse_args(argv)
    records = args.records or (20_000 if args.quick else 200_000)
    print(f"# routed: {machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as scratch, local_stack(("kinesalite",)) as stack:
        os.environ.update(stack.env("kinesalite"))
        runs = measure(records, Path(scratch), RUNS[1:3] if args.quick else RUNS)
    summary(runs)
    return 0


def summary(runs: list[Routed]) -> None:
    by_name = {run.name: run for run in runs}
    one = by_name["1 table"]
    print(
        "\n| run | tables | events | events/s (start-up excluded) | / 1 table | files | spark_start s | read s "
        "| publish s | commit s |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    for run in runs:
        print(run.row(one))
    twenty = by_name["20 tables"]
    print(f"\n20 tables / 1 table: {twenty.seconds / one.seconds:.2f}x (target: at most 1.5x)")
    routed = [run for run in runs if run.name != "unrouted"]
    publish = ", ".join(f"{run.tables} tables {run.timings.get('publish', 0.0):.2f} s" for run in routed)
    print(f"publish step: {publish}")


__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
