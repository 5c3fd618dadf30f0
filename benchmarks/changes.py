"""Merging batches of changes into a table of current state, against the users' own path.

    .venv/bin/python -m benchmarks.changes                  # N = 1,000,000 and 4,000,000
    .venv/bin/python -m benchmarks.changes --quick          # N = 4,000 and 16,000, batches of 1,000 (CI)
    .venv/bin/python -m benchmarks.changes --outputs delta-local --rows 1000000 --batches 2
    .venv/bin/python -m benchmarks.changes --recent 200000  # changes to the newest keys only

For each output (Delta and Iceberg, local and on S3 on moto) and N: a table of N rows (inserted
by kinesis-batch's own merges, LOAD_CHUNK keys each, so its files hold ranges of keys), then
``--batches`` batches of 50,000 changes (80% updates, 10% inserts, 10% deletes) over random live
keys, or (``--recent``) over the newest keys, as changes to orders or sessions mostly are. Each
change is a JSON record ``{"id", "version", "name", "amount", "deleted"}`` (``--changes upsert
--key id --sequence-by version --delete-when deleted=true``); each batch goes two ways:

- **ours**: the records through the Spark tasks' own code (kinesis_batch.decoding.pipeline's
  decode, changes stage and per-page fold; kinesis_batch.spark.files' task files), in this
  process, then the sink's ``publish``: the merge and its marker in one commit;
- **theirs**, the users' own path on the same records (benchmarks.changes_theirs): land them
  raw, then a job that reads the batch back, decodes it, keeps each key's newest change and
  merges it with deltalake's MERGE, or pyiceberg's delete and append, into a table of its own
  that started with the same N rows.

Neither reads Kinesis nor starts Spark: what is measured is records to committed table. Printed
per batch: the seconds of each path, the MiB of data files our merge's commit added, and this
process's peak RSS while ours ran (sampled, benchmarks.processes) and its rise over the batch's
start. After each batch both tables must hold the same keys at the same versions.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from devkit.stack import STATIC_ENV, local_stack

from benchmarks.changes_paths import BatchResult, Changes, Ours
from benchmarks.changes_theirs import Theirs
from benchmarks.common import machine, output_args
from benchmarks.processes import ProcessTree

KINDS = ("delta-local", "delta-s3", "iceberg-local", "iceberg-s3")
LOAD_CHUNK = 500_000  # the first N rows go in as batches of this many inserts
MIB = 1024 * 1024


def measure(
    kind: str, rows: int, batch: int, batches: int, scratch: Path, args: argparse.Namespace
) -> list[BatchResult]:
    changes = Changes(rows, random.Random(args.seed), recent=args.recent)
    name = f"{kind}-{rows}-{args.recent}"
    ours, theirs = (
        Ours(output_args(kind, scratch, f"ours-{name}")),
        Theirs(output_args(kind, scratch, f"theirs-{name}")),
    )
    started = time.monotonic()
    for chunk in changes.initial(LOAD_CHUNK):
        ours.apply(chunk)
    theirs.load(ours.current())
    print(f"{kind}: tables of {rows:,} rows made in {time.monotonic() - started:.1f} s", flush=True)
    results = []
    for number in range(batches):
        records = changes.batch(batch)
        start = psutil.Process().memory_info().rss
        with ProcessTree(os.getpid()) as tree:
            ours_seconds, written = ours.timed_apply(records)
        peak = max(tree.peak("driver"), start)
        theirs_seconds = theirs.timed_apply(records)
        wanted = changes.expected()
        for name, got in (("ours", ours.current_versions()), ("theirs", theirs.current_versions())):
            if got != wanted:
                missing, extra = len(wanted.keys() - got.keys()), len(got.keys() - wanted.keys())
                stale = sum(1 for key in wanted.keys() & got.keys() if wanted[key] != got[key])
                raise SystemExit(
                    f"{kind}: {name} table wrong after batch {number}: {missing} missing, {extra} extra, {stale} stale"
                )
        result = BatchResult(kind, rows, len(records), ours_seconds, theirs_seconds, written, peak, peak - start)
        print(result.line(), flush=True)
        results.append(result)
    return results


def report(results: dict[tuple[str, int], list[BatchResult]], kinds: list[str], sizes: list[int]) -> None:
    def median(kind: str, rows: int, what: str) -> float:
        return statistics.median(getattr(r, what) for r in results[kind, rows])

    print("\nMedians per batch (s; MiB the merge's commit wrote); the largest peak RSS of this process while")
    print("ours ran, and how far it rose above the RSS at the batch's start (MiB)\n")
    print("| output | rows in table | changes | ours s | theirs s | ours / theirs | MiB written | peak RSS | rise |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rows in sizes:
        for kind in kinds:
            ours, theirs = median(kind, rows, "ours"), median(kind, rows, "theirs")
            print(
                f"| {kind} | {rows:,} | {results[kind, rows][0].changes:,} | {ours:.2f} | {theirs:.2f} | "
                f"{ours / theirs:.2f} | {median(kind, rows, 'written') / MIB:,.1f} | "
                f"{max(r.rss for r in results[kind, rows]) / MIB:,.0f} | "
                f"{max(r.growth for r in results[kind, rows]) / MIB:,.0f} |"
            )
    small, large = min(sizes), max(sizes)
    if large > small:
        print(f"\nMerge time at {large:,} rows / at {small:,} ({large / small:.0f}x the table):\n")
        print("| output | ours | theirs |\n|---|---|---|")
        for kind in kinds:
            ratio = [median(kind, large, what) / median(kind, small, what) for what in ("ours", "theirs")]
            print(f"| {kind} | {ratio[0]:.2f}x | {ratio[1]:.2f}x |")
    print(f"\nevery batch left both tables with the same keys at the same versions: {sum(map(len, results.values()))}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 4,000 and 16,000, batches of 1,000 (CI)")
    parser.add_argument("--rows", help="table sizes N, comma-separated (default 1000000,4000000)")
    parser.add_argument("--batch", type=int, help="changes per batch (default 50,000; --quick 1,000)")
    parser.add_argument("--batches", type=int, help="batches per table (default 3, --quick 2; the median is shown)")
    parser.add_argument("--outputs", help=f"comma-separated, of {','.join(KINDS)} (default all; --quick local)")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument(
        "--recent",
        type=int,
        default=0,
        help="updates and deletes pick among the newest RECENT keys (default 0: any live key)",
    )
    args = parser.parse_args(argv)
    sizes = [int(n) for n in (args.rows or ("4000,16000" if args.quick else "1000000,4000000")).split(",")]
    batch = args.batch or (1_000 if args.quick else 50_000)
    outputs = args.outputs or ("delta-local,iceberg-local" if args.quick else ",".join(KINDS))
    kinds = [kind for kind in outputs.split(",") if kind]
    if set(kinds) - set(KINDS):
        parser.error(f"unknown --outputs {', '.join(sorted(set(kinds) - set(KINDS)))}: choose from {', '.join(KINDS)}")
    keys = f"the newest {args.recent:,} keys" if args.recent else "random live keys"
    print(f"# changes over {keys}: {machine()}; load average {os.getloadavg()[0]:.2f}", flush=True)
    results: dict[tuple[str, int], list[BatchResult]] = {}
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-changes-") as scratch, local_stack(()) as stack:
        url = stack.dynamodb.url  # moto_server: S3 here
        os.environ.update({**STATIC_ENV, "AWS_ENDPOINT_URL_S3": url, "AWS_ENDPOINT_URL_DYNAMODB": url})
        for rows in sizes:
            for kind in kinds:
                batches = args.batches or (2 if args.quick else 3)
                results[kind, rows] = measure(kind, rows, batch, batches, Path(scratch), args)
    report(results, kinds, sizes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
