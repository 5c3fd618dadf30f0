"""Where a landing's CPU goes, by kind of process: the command (the driver), the JVM, the Python
worker daemon, and the Python workers (the read tasks).

Two streams of 8 shards of 1 KiB records: one of 64 records (the start-up: what a run costs
before its records do) and one of ``--records`` (300,000). Each is landed by ``kinesis-batch run``
into a parquet folder, raw and typed JSON (``--decode``), with ``--read-limits none``, watched
(benchmarks.processes: CPU of every process of the tree, by kind). Printed per landing: the
start-up's CPU seconds by kind and its wall time, and the margin, (big - small) / GiB of payload
between the two, by kind; each the least of ``--repeat`` landings.

With ``--base DIR`` the same landings are made by another checkout's code (its own ``.venv``,
e.g. the base of a change) on the same streams, each with its own lease table and output, and
both are printed side by side: figures of one machine at one time.

    .venv/bin/python -m benchmarks.process_cpu [--quick] [--records N] [--decode raw,json]
        [--base DIR] [--reader R]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from devkit.stack import local_stack

from benchmarks.common import MIB, REPO, even_backlog, filler, machine, plain_client
from benchmarks.events import encodings
from benchmarks.processes import KINDS, watched

GIB = 1024 * MIB
SHARDS = 8
START_RECORDS = 64


@dataclass(frozen=True)
class Landing:
    """One ``kinesis-batch run``: its records, their payload bytes, wall seconds and CPU seconds
    by kind of process."""

    records: int
    payload_bytes: int
    seconds: float
    cpu: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.cpu.values())


@dataclass(frozen=True)
class Row:
    """One code's landing of one decode: its start-up run and its big run."""

    code: str
    decode: str
    start: Landing
    big: Landing

    def margin(self, kind: str | None = None) -> float:
        """CPU seconds per GiB between the start-up and the big run (of ``kind``, or all)."""
        gib = (self.big.payload_bytes - self.start.payload_bytes) / GIB
        if kind is None:
            return (self.big.total - self.start.total) / gib
        return (self.big.cpu[kind] - self.start.cpu[kind]) / gib

    def lines(self) -> list[str]:
        name = f"{self.code}, {self.decode}"
        start = " | ".join(f"{self.start.cpu[kind]:.2f}" for kind in KINDS)
        margin = " | ".join(f"{self.margin(kind):.2f}" for kind in KINDS)
        return [
            f"| {name} | start-up ({self.start.records} records), CPU s | {start} | **{self.start.total:.2f}** "
            f"| {self.start.seconds:.1f} |",
            f"| {name} | margin, CPU s per GiB | {margin} | **{self.margin():.2f}** "
            f"| {self.big.seconds:.1f} ({self.big.records:,} records) |",
        ]


HEAD = f"| code, decode | what | {' | '.join(KINDS)} | all | wall s |\n|---|---|{'---|' * len(KINDS)}---|---|"


def least(landings: list[Landing]) -> Landing:
    """The landing of least CPU of repeats of one: the machine's noise only ever adds."""
    return min(landings, key=lambda landing: landing.total)


def land(
    checkout: Path, stream: str, records: int, size: int, flags: tuple[str, ...], scratch: Path, env: dict[str, str]
) -> Landing:
    """``kinesis-batch run`` of ``checkout`` (its .venv) over ``stream``: every record landed."""
    python = sys.executable if checkout == REPO else str(checkout / ".venv" / "bin" / "python")
    tag = f"{stream}-{time.monotonic_ns()}"  # a table and an output of each landing's own
    command = [python, "-m", "kinesis_batch.cli", "run", "--stream", stream, "--output", str(scratch / tag),
               "--table", tag, "--read-limits", "none", "--json", *flags]  # fmt: skip
    seconds, tree, out = watched(command, checkout, env)
    report = json.loads(out)
    if report["records"] != records or report.get("dead_letters", 0):
        raise SystemExit(
            f"{tag}: {report['records']:,} records read of {records:,}, {report.get('dead_letters')} dead letters"
        )
    return Landing(records, size, seconds, tree.cpu_by_kind())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.process_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, help="the big stream's (default 300,000; --quick 5,000)")
    parser.add_argument("--decode", help="raw, json or both (default both; --quick raw)")
    parser.add_argument("--quick", action="store_true", help="the smallest run that goes through every step")
    parser.add_argument("--base", type=Path, help="another checkout, measured beside this one")
    parser.add_argument("--repeat", type=int, help="landings of each, the least CPU kept (default 3; --quick 1)")
    parser.add_argument("--reader", help="KINESIS_BATCH_READER for both codes (their default if unset)")
    args = parser.parse_args(argv)
    args.records = args.records or (5_000 if args.quick else 300_000)
    args.decode = args.decode or ("raw" if args.quick else "raw,json")
    repeat = args.repeat or (1 if args.quick else 3)
    decodes = [d for d in args.decode.split(",") if d]
    if set(decodes) - {"raw", "json"} or not decodes:
        parser.error(f"--decode {args.decode}: raw, json or both")
    codes = [("new", REPO)] + ([("base", args.base.resolve())] if args.base else [])
    env = {"KINESIS_BATCH_READER": args.reader} if args.reader else {}
    print(f"# process_cpu: {machine()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as folder, local_stack(("kinesalite",)) as stack:
        os.environ.update(stack.env("kinesalite"))
        scratch = Path(folder)
        kinesis = plain_client("kinesis")
        schemas = scratch / "schemas"
        schemas.mkdir()
        json_encoding = encodings(schemas, plain_client("glue"))["json"]
        for decode in decodes:
            payload = json_encoding.payload if decode == "json" else filler
            flags = json_encoding.flags if decode == "json" else ()
            streams = {}
            for count in (START_RECORDS, args.records):
                name = f"cpu-{decode}-{count}-{int(time.time())}"
                took = time.monotonic()
                size = even_backlog(kinesis, name, SHARDS, count, payload)
                streams[count] = (name, size)
                print(f"backlog: {name}, {size / MIB:,.1f} MiB, put in {time.monotonic() - took:.1f} s", flush=True)
            for code, checkout in codes:
                landed = [
                    least([land(checkout, name, count, size, flags, scratch, env) for _ in range(repeat)])
                    for count, (name, size) in streams.items()
                ]
                row = Row(code, decode, *landed)
                print("\n".join(row.lines()), flush=True)
                rows.append(row)
            for name, _ in streams.values():
                kinesis.delete_stream(StreamName=name)  # the emulator keeps every record in memory
    print(f"\n{HEAD}")
    for row in rows:
        print("\n".join(row.lines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
