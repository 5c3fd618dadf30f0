"""What a tier of the test suite costs: ``make test`` and every CI tier run through this.

    python tools/devkit/suite_cost.py --tier NAME [--junit PATH] [--kind KIND] -- pytest ARGS...
    python tools/devkit/suite_cost.py --report PATH [--kind KIND]   # a JUnit report already written

It runs the pytest command (adding ``--junitxml``), then prints, after pytest's own summary:
its wall time; its CPU seconds, of every process it started and waited for (``wait4``'s rusage:
pytest, its workers, the JVMs, emulators and commands they started), and the machine's busy
cores over the same time (``/proc/stat``: another load on the machine shows there, not in the
first); the number of JVMs started under it (seen by polling ``/proc`` every 0.2 s: a JVM that
lives less than that may be missed, Spark's live seconds); its ten most expensive tests; and its
cost by folder and by kind. A test's kind is the ``kind`` property tests/conftest.py records for
it (pure, endpoints, whole run, isolated process); ``--kind`` names every test's kind in a tier
where one kind says it all (a compatibility environment).

The exit status is the command's: the report never changes a tier's verdict.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

TOP = 10


@dataclass(frozen=True)
class Case:
    """One test as the JUnit report has it: its id, its file, its kind, its seconds (setup, call
    and teardown together, as pytest reports ``time``)."""

    name: str
    path: str
    kind: str
    seconds: float

    @property
    def folder(self) -> str:
        return str(Path(self.path).parent)


@dataclass(frozen=True)
class Usage:
    """What a tier's processes used."""

    wall: float
    cpu: float  # user + system of every process waited for under the command
    machine_busy: float  # cores busy on average over the wall time, the whole machine's
    jvms: int


def cases_of(report: Path, kind: str | None = None) -> list[Case]:
    """The test cases of a JUnit report. ``kind`` overrides every case's recorded kind."""
    cases = []
    for testcase in ET.parse(report).getroot().iter("testcase"):
        properties = {p.get("name"): p.get("value", "") for p in testcase.iter("property")}
        classname = testcase.get("classname", "")
        path = properties.get("path") or module_path(classname)
        cases.append(
            Case(
                name=f"{classname}::{testcase.get('name', '')}",
                path=path,
                kind=kind or properties.get("kind") or "unknown",
                seconds=float(testcase.get("time") or 0),
            )
        )
    return cases


def module_path(classname: str) -> str:
    """The file of a JUnit classname: its module, or its module's when it names a class."""
    parts = classname.split(".")
    if len(parts) > 1 and parts[-1][:1].isupper():
        parts = parts[:-1]
    return "/".join(parts) + ".py"


def table(rows: Iterable[tuple[str, int, float]], title: str, total: float) -> list[str]:
    """``| title | tests | seconds | share |`` rows, most expensive first."""
    lines = [f"| {title} | tests | worker-seconds | share |", "|---|---:|---:|---:|"]
    for name, count, seconds in sorted(rows, key=lambda row: -row[2]):
        lines.append(f"| {name} | {count:,} | {seconds:,.1f} | {seconds / total:.0%} |" if total else f"| {name} |")
    return lines


def grouped(cases: Sequence[Case], key: str) -> list[tuple[str, int, float]]:
    counts: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    for case in cases:
        name = getattr(case, key)
        counts[name] += 1
        seconds[name] += case.seconds
    return [(name, counts[name], seconds[name]) for name in counts]


def summary(tier: str, cases: Sequence[Case], usage: Usage | None) -> str:
    """The printed cost of a tier: its usage, its ten most expensive tests, by kind, by folder."""
    total = sum(case.seconds for case in cases)
    lines = [f"== cost of {tier}: {len(cases):,} tests, {total:,.1f} worker-seconds in tests"]
    if usage is not None:
        lines.append(
            f"wall {usage.wall:,.1f} s, CPU {usage.cpu:,.1f} s of its processes "
            f"({usage.cpu / usage.wall if usage.wall else 0:.2f} cores), "
            f"machine {usage.machine_busy:.2f} of {os.cpu_count()} cores busy, {usage.jvms} JVMs started"
        )
    lines.append(f"the {TOP} most expensive tests:")
    for case in sorted(cases, key=lambda c: -c.seconds)[:TOP]:
        lines.append(f"  {case.seconds:8.1f} s  {case.kind:<16} {case.name}")
    lines += table(grouped(cases, "kind"), "kind", total)
    lines += table(grouped(cases, "folder"), "folder", total)
    return "\n".join(lines)


def busy_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine since boot."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(64):
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


class JvmCounter:
    """Counts the JVMs (``comm`` java) that start under one process while it runs."""

    def __init__(self, root: int, every: float = 0.2) -> None:
        self.root, self.every = root, every
        self.seen: set[tuple[int, str]] = set()  # (pid, start time): a pid can be used again
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="jvm-counter", daemon=True)

    def __enter__(self) -> JvmCounter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.wait(self.every):
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                try:
                    if Path(entry.path, "comm").read_text().strip() != "java":
                        continue
                    start = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[19]
                except OSError:
                    continue  # it ended while we looked
                key = (int(entry.name), start)
                if key not in self.seen and descends_from(int(entry.name), self.root):
                    self.seen.add(key)


def run(command: Sequence[str]) -> tuple[int, Usage]:
    """Run ``command`` to its end; its exit status and what it used."""
    started, (busy0, total0) = time.monotonic(), busy_jiffies()
    process = subprocess.Popen(command)
    with JvmCounter(process.pid) as jvms:
        _, status, rusage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    busy1, total1 = busy_jiffies()
    wall = time.monotonic() - started
    cores = os.cpu_count() or 1
    usage = Usage(
        wall=wall,
        cpu=rusage.ru_utime + rusage.ru_stime,
        machine_busy=cores * (busy1 - busy0) / (total1 - total0) if total1 > total0 else 0.0,
        jvms=len(jvms.seen),
    )
    return process.returncode, usage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/devkit/suite_cost.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", help="the tier's name, for the report")
    parser.add_argument("--junit", type=Path, help="where the JUnit report goes (or is, with --report)")
    parser.add_argument("--report", type=Path, help="print the cost of a JUnit report already written")
    parser.add_argument("--kind", help="every test's kind in this tier (e.g. 'compat environment')")
    parser.add_argument("command", nargs="*", help="the pytest command (after --)")
    args = parser.parse_args(argv)
    if args.report:
        print(summary(args.tier or str(args.report), cases_of(args.report, args.kind), None))
        return 0
    if not args.command or not args.tier:
        parser.error("give --tier NAME and the pytest command after --, or --report PATH")
    junit = args.junit or Path(f".venv/junit-{args.tier}.xml")
    junit.parent.mkdir(parents=True, exist_ok=True)
    junit.unlink(missing_ok=True)
    code, usage = run([*args.command, f"--junitxml={junit}"])
    cases = cases_of(junit, args.kind) if junit.exists() else []
    print(summary(args.tier, cases, usage), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
