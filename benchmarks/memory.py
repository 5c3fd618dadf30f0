"""Flat memory: peak RSS of the driver, the Spark JVM and the Python worker of ``kinesis-batch
run`` for a backlog of N records and of 4N, beside the hand-written loop's, which keeps every
row until it writes. The stream has 16 open shards (19 in its history, with a split and a
merge) and the run one task slot (``local[1]``): one task reads every shard, 16 at once.

    .venv/bin/python -m benchmarks.memory            # N = 200,000 records of 1 KiB
    .venv/bin/python -m benchmarks.memory --quick    # N = 5,000, 4 open shards (CI)
    .venv/bin/python -m benchmarks.memory --typed json,avro,protobuf

Then (``--typed``, default json) the same for typed landing: a backlog of N and of 4N events of
each encoding (benchmarks.events) landed with ``--decode``, the worker's peak beside raw's.

Each process's resident set is sampled every 50 ms (psutil) over the process tree.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from devkit.stack import local_stack

from benchmarks.common import MIB, REPO, RUN, backlog_with_split_and_merge, machine, plain_client
from benchmarks.processes import ProcessTree

ROLES = ("driver", "jvm", "python worker")


def kinesis_batch_peaks(stream: str, output: Path, decoding: tuple[str, ...] = ()) -> dict[str, int]:
    process = subprocess.Popen(
        [
            *RUN,
            "--stream",
            stream,
            "--output",
            str(output),
            "--read-limits",
            "none",
            "--table",
            f"memory-{stream}",
            "--spark-master",
            "local[1]",
            *decoding,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
        start_new_session=True,
    )
    with ProcessTree(process.pid) as peaks:
        _, stderr = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"kinesis-batch run failed: {stderr.decode()[-2000:]}")
    return {role: peaks.peak(role) for role in ROLES}


def hand_written_peak(stream: str, output: Path) -> int:
    code = (
        "import sys; from pathlib import Path; from benchmarks.common import hand_written; "
        f"hand_written({stream!r}, Path({str(output)!r}))"
    )
    process = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, start_new_session=True)
    with ProcessTree(process.pid) as peaks:
        process.wait()
    if process.returncode != 0:
        raise SystemExit("the hand-written loop failed")
    return peaks.peak("driver")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 5,000 (CI)")
    parser.add_argument(
        "--records",
        type=int,
        help="N (default 200,000: over 19 shards more than a 10,000-record page each, so N and 4N "
        "both hold full pages and only the backlog differs)",
    )
    parser.add_argument("--typed", default="json", help="encodings also landed typed at N and 4N ('' for none)")
    args = parser.parse_args(argv)
    n = args.records or (5_000 if args.quick else 200_000)
    shards = 4 if args.quick else 16
    print(f"# memory: {machine()}", flush=True)
    rows: dict[int, tuple[dict[str, int], int]] = {}
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as scratch, local_stack(("kinesalite",)) as stack:
        os.environ.update(stack.env("kinesalite"))
        kinesis = plain_client("kinesis")
        for size in (n, 4 * n):
            stream = f"memory-{size}-{int(time.time())}"
            backlog_with_split_and_merge(kinesis, stream, size, shards=shards)
            peaks = kinesis_batch_peaks(stream, Path(scratch) / f"kb-{size}")
            rows[size] = (peaks, hand_written_peak(stream, Path(scratch) / f"hand-{size}"))
            kinesis.delete_stream(StreamName=stream)
            print(f"{size:,} records measured", flush=True)
        typed = typed_peaks(kinesis, Path(scratch), n, shards, tuple(e for e in args.typed.split(",") if e))
    print("\n| backlog | driver | Spark JVM | largest Python worker | hand-written loop |\n|---|---|---|---|---|")
    for size, (peaks, hand) in rows.items():
        cells = " | ".join(f"{peaks[role] / MIB:,.0f} MiB" for role in ROLES)
        print(f"| {size:,} | {cells} | {hand / MIB:,.0f} MiB |")
    (small, small_hand), (large, large_hand) = rows[n], rows[4 * n]
    ratios = ", ".join(f"{role} {large[role] / small[role]:.2f}" for role in ROLES)
    print(f"\npeak at 4N / peak at N: {ratios}; hand-written loop {large_hand / small_hand:.2f}")
    for name, (at_n, at_4n) in typed.items():
        print(
            f"typed {name}: largest Python worker {at_n / MIB:,.0f} MiB at N, {at_4n / MIB:,.0f} MiB at 4N: "
            f"4N / N {at_4n / at_n:.2f}; typed / raw at 4N {at_4n / large['python worker']:.2f}"
        )
    return 0


def typed_peaks(kinesis: Any, scratch: Path, n: int, shards: int, names: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """The largest Python worker's peak at N and 4N, landing each encoding typed."""
    from benchmarks.events import encodings

    schemas = scratch / "schemas"
    schemas.mkdir(exist_ok=True)
    codes = encodings(schemas, plain_client("glue"))
    peaks: dict[str, tuple[int, int]] = {}
    for name in names:
        measured = []
        for size in (n, 4 * n):
            stream = f"memory-{name}-{size}-{int(time.time())}"
            backlog_with_split_and_merge(kinesis, stream, size, shards=shards, payload=codes[name].payload)
            measured.append(kinesis_batch_peaks(stream, scratch / f"{name}-{size}", codes[name].flags)["python worker"])
            kinesis.delete_stream(StreamName=stream)
            print(f"{size:,} {name} records measured typed", flush=True)
        peaks[name] = (measured[0], measured[1])
    return peaks


if __name__ == "__main__":
    raise SystemExit(main())
