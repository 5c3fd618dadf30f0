"""Against Kinesis' own limit, at scale: ``kinesis-batch run`` (paced, as on AWS) through a local
endpoint that enforces per-shard read limits (devkit.limits_proxy: calls/s and bytes/s
per shard, throttling beyond, a page holds 5 s of the rate, 5-minute iterators).

    .venv/bin/python -m benchmarks.read_limit            # 64 shards at 128 KiB/s, 5 calls/s, local[2]
    .venv/bin/python -m benchmarks.read_limit --quick    # 4 shards, grouped design only (CI)

Many shards at a reduced per-shard limit model a large stream on one machine: 64 shards at
128 KiB/s ask for 8 MiB/s in all, as 4 shards at AWS's 2 MiB/s would, but with 64 shards to keep
busy at once. Every shard holds the same backlog (6 pages: 30 s of reading at the limit), so
the read's span is the design's, not that of the shard that drew the most records. Two designs
read it on 2 task slots, each with a lease table of its own: shards grouped per task (the
default) and one shard per task (``--shards-per-task 1``, the design before). Reported per
design: the aggregate rate (the bytes every shard got before its last call, over the span from
the first call to the last) against shards x the limit, each shard's own sustained rate, the
throttled calls, and how busy the machine's cores were over the read (the endpoint, the proxy
and the readers share them: near 100%, the machine is the limit).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from devkit.limits_proxy import LimitsProxy, ShardLimits, ShardStats
from devkit.stack import local_stack

from benchmarks.common import even_backlog, kinesis_batch_run, machine, plain_client

KIB = 1024


@dataclass(frozen=True)
class Design:
    name: str
    args: tuple[str, ...]


DESIGNS = (Design("grouped (default)", ()), Design("one shard per task", ("--shards-per-task", "1")))


def aggregate(stats: dict[str, ShardStats]) -> float:
    """Bytes per second over the whole read, the last call of each shard left out (as in
    ShardStats.sustained_rate): what the read drew from the stream's limits."""
    firsts = [s.first_call for s in stats.values() if s.first_call is not None]
    lasts = [s.last_call for s in stats.values() if s.last_call is not None]
    if not firsts or not lasts or max(lasts) <= min(firsts):
        return 0.0
    return sum(s.bytes_before_last_call for s in stats.values()) / (max(lasts) - min(firsts))


class CpuSampler:
    """The machine's busy CPU time, sampled every 0.25 s: how busy its cores were over a span."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, float]] = []  # monotonic time, busy s, total s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            times = psutil.cpu_times()
            total = sum(times)
            self.samples.append((time.monotonic(), total - times.idle - getattr(times, "iowait", 0.0), total))
            if self._stop.wait(0.25):
                return

    def busy(self, start: float, end: float) -> float:
        """The busy share of all cores between two monotonic times (0 to 1)."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            return 0.0
        (_, busy0, total0), (_, busy1, total1) = inside[0], inside[-1]
        return (busy1 - busy0) / max(total1 - total0, 1e-9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 shards, the grouped design only (CI)")
    parser.add_argument("--shards", type=int, help="default 64 (--quick 4)")
    parser.add_argument("--kib-per-second", type=int, default=128, help="per-shard byte limit (default 128 KiB/s)")
    parser.add_argument(
        "--pages", type=float, help="backlog per shard, in pages of 5 s (default 6: 30 s at the limit; --quick 1.5)"
    )
    parser.add_argument("--grouped-only", action="store_true", help="leave out the one-shard-per-task design")
    args = parser.parse_args(argv)
    shards = args.shards or (4 if args.quick else 64)
    designs = DESIGNS[:1] if args.quick or args.grouped_only else DESIGNS
    limits = ShardLimits.scaled(bytes_per_second=args.kib_per_second * KIB)
    pages = args.pages or (1.5 if args.quick else 6.0)
    per_shard = int(pages * limits.max_bytes_per_call / (KIB + 8))  # 1 KiB of data, a key of up to 8 bytes
    print(f"# read limit: {machine()}", flush=True)
    print(f"{shards} shards x {per_shard:,} records of 1 KiB, each shard limited to {limits}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as scratch, local_stack(("kinesalite",)) as stack:
        os.environ.update(stack.env("kinesalite"))
        kinesis = plain_client("kinesis")
        stream = f"limit-{int(time.time())}"
        even_backlog(kinesis, stream, shards, shards * per_shard)
        read_limits = f"{limits.calls_per_second},{limits.bytes_per_second}"
        for number, design in enumerate(designs):
            with LimitsProxy(stack.kinesis["kinesalite"].url, limits=limits) as proxy, CpuSampler() as cpu:
                os.environ["AWS_ENDPOINT_URL_KINESIS"] = proxy.url
                _, _, report = kinesis_batch_run(
                    stream,
                    Path(scratch) / f"out-{number}",
                    read_limits=read_limits,
                    extra=("--spark-master", "local[2]", "--table", f"limit-{number}-{stream}", *design.args),
                )
                stats = proxy.stats()
            if report["records"] != shards * per_shard:
                raise SystemExit(f"{design.name} read {report['records']:,} records, not {shards * per_shard:,}")
            firsts = sorted(s.first_call for s in stats.values() if s.first_call is not None)
            lasts = sorted(s.last_call for s in stats.values() if s.last_call is not None)
            rows.append((design, report, stats, cpu.busy(firsts[0], lasts[-1])))
            print(
                f"{design.name}: {report['tasks']} tasks, read in {report['timings']['read']:.1f} s; from the first "
                f"call, shards started over {firsts[-1] - firsts[0]:.1f} s and ended from {lasts[0] - firsts[0]:.1f} "
                f"to {lasts[-1] - firsts[0]:.1f} s",
                flush=True,
            )
    limit = shards * limits.bytes_per_second
    print(
        f"\n| design | tasks | read s | aggregate KiB/s | of {shards} x limit | per-shard rate | throttled | CPU busy |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for design, report, stats, busy in rows:
        rates = [(s.sustained_rate() or 0.0) / limits.bytes_per_second for s in stats.values()]
        calls = sum(s.calls for s in stats.values())
        throttled = sum(s.throttled for s in stats.values())
        rate = aggregate(stats)
        print(
            f"| {design.name} | {report['tasks']} | {report['timings']['read']:.1f} | {rate / KIB:,.0f} "
            f"| {rate / limit:.2f} "
            f"| {min(rates):.2f} to {max(rates):.2f} | {throttled} of {calls} ({throttled / max(calls, 1):.1%}) "
            f"| {busy:.0%} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
