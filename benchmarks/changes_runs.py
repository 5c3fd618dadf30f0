"""Tables of current state end to end: change records in a Kinesis stream to a merged table, by
the processes each path runs (benchmarks.changes measures the same merges inside one process).

    PYTHONPATH=tools .venv/bin/python -m benchmarks.changes_runs                  # N = 1,000,000, delta-s3
    PYTHONPATH=tools .venv/bin/python -m benchmarks.changes_runs --outputs delta-s3,iceberg-s3 --rows 200000
    PYTHONPATH=tools .venv/bin/python -m benchmarks.changes_runs --quick          # N = 4,000, delta-local

On the local stack (kinesalite, S3 on moto), one stream of 4 shards per output; the table's N
rows go in as a first batch of inserts, then ``--batches`` batches of 50,000 changes
(benchmarks.changes_paths' Changes: 80% updates, 10% inserts, 10% deletes over random live
keys), each put into the stream and then drained two ways, each with a lease table of its own:

- **ours**: one ``kinesis-batch run --decode json --changes upsert --key id --sequence-by
  version --delete-when deleted=true``;
- **theirs**: ``kinesis-batch run`` landing the records raw (an append), then
  benchmarks.changes_job, a new process, merging the batch that run reported into a table of its
  own with deltalake or pyiceberg.

Each process is timed from its start to its exit, and its tree's CPU seconds are summed
(benchmarks.processes; the emulators' CPU is in neither path). After every batch both tables
must hold exactly the keys, at the versions, that the changes sent leave.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from devkit.stack import local_stack, wait_active

from benchmarks.changes_paths import Changes, read_table
from benchmarks.changes_theirs import Theirs, versions
from benchmarks.common import REPO, RUN, machine, open_output, output_args, plain_client, put_records
from benchmarks.processes import watched
from kinesis_batch.shards.model import Record

OURS = ("--decode", "json", "--changes", "upsert", "--key", "id", "--sequence-by", "version")
OURS += ("--delete-when", "deleted=true")
SHARDS = 4
MIB = 1024 * 1024


@dataclass(frozen=True)
class Timed:
    """One process, or two one after the other: wall seconds, CPU seconds, largest Python worker,
    and a run's read and publish steps (its report's timings)."""

    seconds: float
    cpu: float
    worker: int = 0
    read: float = 0.0
    publish: float = 0.0

    def __add__(self, other: Timed) -> Timed:
        return Timed(
            self.seconds + other.seconds,
            self.cpu + other.cpu,
            max(self.worker, other.worker),
            self.read + other.read,
            self.publish + other.publish,
        )


@dataclass(frozen=True)
class EndToEnd:
    kind: str
    rows: int  # live keys in the table before the batch
    changes: int
    ours: Timed
    landing: Timed
    job: Timed

    @property
    def theirs(self) -> Timed:
        return self.landing + self.job

    def line(self) -> str:
        return (
            f"{self.kind} N={self.rows:,}: {self.changes:,} changes, ours {self.ours.seconds:.1f} s "
            f"({self.ours.cpu:.1f} CPU s), theirs {self.theirs.seconds:.1f} s = landing {self.landing.seconds:.1f} "
            f"+ job {self.job.seconds:.1f} ({self.theirs.cpu:.1f} CPU s): "
            f"{self.ours.seconds / self.theirs.seconds:.2f}; "
            f"read and publish steps: ours {self.ours.read:.1f} and {self.ours.publish:.1f} s, "
            f"landing {self.landing.read:.1f} and {self.landing.publish:.1f} s"
        )


class Paths:
    """One output kind's three outputs on one stream: ours, the raw landing, their table."""

    def __init__(self, kind: str, rows: int, scratch: Path) -> None:
        self.kind, self.stream = kind, f"changes-{kind}-{rows}-{os.getpid()}"
        self.ours, self.landing, self.theirs = (
            output_args(kind, scratch, f"e2e-{what}-{rows}") for what in ("ours", "land", "theirs")
        )
        self.kinesis = plain_client("kinesis")
        self.kinesis.create_stream(StreamName=self.stream, ShardCount=SHARDS)
        wait_active(self.kinesis, self.stream)

    def batch(self, records: list[Record], rows: int) -> EndToEnd:
        """``records`` put into the stream, then drained both ways."""
        put_records(self.kinesis, self.stream, len(records), payload=lambda i: records[i].data)
        ours, _ = self._run(self.ours, "ours", OURS, len(records))
        landing, batch_id = self._run(self.landing, "land", (), len(records))
        job = [sys.executable, "-m", "benchmarks.changes_job", batch_id, *self.landing, "--", *self.theirs]
        seconds, tree, out = watched(job, REPO)
        if json.loads(out)["changes"] != len(records):
            raise SystemExit(f"{self.kind}: the job read {out.strip()}, not {len(records):,} changes")
        return EndToEnd(self.kind, rows, len(records), ours, landing, Timed(seconds, tree.cpu_seconds))

    def check(self, wanted: dict[int, int]) -> None:
        sink = open_output(self.ours, app=f"{self.stream}-ours", stream=self.stream)
        ours = versions(read_table(sink, ["id", "version"]))
        for name, got in (("ours", ours), ("theirs", Theirs(self.theirs).current_versions())):
            if got != wanted:
                stale = sum(1 for key in wanted.keys() & got.keys() if wanted[key] != got[key])
                raise SystemExit(
                    f"{self.kind}: {name} table wrong: {len(wanted.keys() - got.keys())} keys missing, "
                    f"{len(got.keys() - wanted.keys())} extra, {stale} stale"
                )

    def close(self) -> None:
        self.kinesis.delete_stream(StreamName=self.stream)  # the emulator keeps every record in memory

    def _run(self, output: tuple[str, ...], who: str, extra: tuple[str, ...], records: int) -> tuple[Timed, str]:
        table = f"{self.stream}-{who}"
        command = [*RUN, "--stream", self.stream, *output, "--table", table, "--read-limits", "none", "--json", *extra]
        seconds, tree, out = watched(command, REPO)
        report = json.loads(out)
        if report["records"] != records or report.get("dead_letters", 0):
            raise SystemExit(f"{self.kind} {who}: {report['records']:,} records of {records:,}, {report}")
        steps = report["timings"]
        timed = Timed(seconds, tree.cpu_seconds, tree.peak("python worker"), steps["read"], steps["publish"])
        return timed, str(report["batch_id"])


def measure(kind: str, rows: int, batch: int, batches: int, scratch: Path, seed: int) -> list[EndToEnd]:
    changes, paths = Changes(rows, random.Random(seed)), Paths(kind, rows, scratch)
    try:
        (first,) = changes.initial(rows)
        load = paths.batch(first, 0)
        paths.check(changes.expected())
        print(f"{kind}: tables of {rows:,} rows made: {load.line()}", flush=True)
        done = []
        for _ in range(batches):
            result = paths.batch(changes.batch(batch), len(changes.live))
            paths.check(changes.expected())
            print(result.line(), flush=True)
            done.append(result)
        return done
    finally:
        paths.close()


def report(results: dict[tuple[str, int], list[EndToEnd]]) -> None:
    print("\nMedians per batch: wall s from each process's start to its exit, CPU s of its process tree;")
    print("theirs = the landing run + the job; worker: ours' largest Python worker (MiB)\n")
    print(
        "| output | rows in table | changes | ours s | landing s | job s | theirs s | ours / theirs "
        "| ours CPU s | theirs CPU s | CPU ours / theirs | worker MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (kind, rows), done in results.items():
        median = _medians(done)
        ours, landing, job = median("ours", "seconds"), median("landing", "seconds"), median("job", "seconds")
        theirs, cpu, their_cpu = median("theirs", "seconds"), median("ours", "cpu"), median("theirs", "cpu")
        print(
            f"| {kind} | {rows:,} | {done[0].changes:,} | {ours:.1f} | {landing:.1f} | {job:.1f} | {theirs:.1f} "
            f"| {ours / theirs:.2f} | {cpu:.1f} | {their_cpu:.1f} | {cpu / their_cpu:.2f} "
            f"| {max(r.ours.worker for r in done) / MIB:,.0f} |"
        )
    print(f"\nevery batch left both tables with the keys and versions sent: {sum(map(len, results.values()))}")


def _medians(done: list[EndToEnd]) -> Callable[[str, str], float]:
    """``median(path, what)``: the median of ``what`` (seconds, cpu) of ``path`` over ``done``."""
    return lambda pick, what: statistics.median(getattr(getattr(r, pick), what) for r in done)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 4,000, one batch of 1,000, delta-local (CI)")
    parser.add_argument("--rows", help="table sizes N, comma-separated (default 1000000)")
    parser.add_argument("--batch", type=int, help="changes per batch (default 50,000; --quick 1,000)")
    parser.add_argument("--batches", type=int, help="batches per table (default 3, --quick 1; the median is shown)")
    parser.add_argument("--outputs", help="comma-separated output kinds (default delta-s3; --quick delta-local)")
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args(argv)
    sizes = [int(n) for n in (args.rows or ("4000" if args.quick else "1000000")).split(",")]
    batch = args.batch or (1_000 if args.quick else 50_000)
    batches = args.batches or (1 if args.quick else 3)
    kinds = [kind for kind in (args.outputs or ("delta-local" if args.quick else "delta-s3")).split(",") if kind]
    print(f"# changes end to end, random live keys: {machine()}; load average {os.getloadavg()[0]:.2f}", flush=True)
    results: dict[tuple[str, int], list[EndToEnd]] = {}
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-changes-runs-") as scratch, local_stack() as stack:
        os.environ.update(stack.env("kinesalite"))
        for rows in sizes:
            for kind in kinds:
                results[kind, rows] = measure(kind, rows, batch, batches, Path(scratch), args.seed)
    report(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
