"""A fleet of small streams: each its own ``kinesis-batch run`` (as one DAG per stream runs them,
``--at-once`` at a time) against one run of them all as a group (``run --streams-file F --group
G``): wall seconds, CPU seconds of every process, peak resident memory, Spark starts.

    .venv/bin/python -m benchmarks.fleet            # 50 streams of 2 shards, 2,000 records each; 200 to plan
    .venv/bin/python -m benchmarks.fleet --quick    # 6 streams of 2 shards, 200 records each; 12 to plan (CI)

Both read the same backlog: the streams are made twice over, one set for the single runs and
one for the group, with the same records, into parquet folders. Every process of each way is
watched (benchmarks.processes); the single runs' peaks are those of the largest run, their sum
at once is at most ``--at-once`` times it. Each way is checked to have read every record.

Then many small streams (``--many``, default 200) in groups (``--groups``, default 4; each a
process, all started at once, as a platform team's schedules do at the top of the hour): their
first run, an hour with nothing new (what planning and leasing every stream costs each hour),
and the same hour behind the limits proxy with AWS's own control-plane limits (not scaled:
DescribeStreamSummary 20 calls a second for the account): the time the limits cost, the
throttles met and the seconds the runs waited them out.

Then the same two ways with every read an EMR Serverless job run (``--job-runs``, default 10
streams; --quick 3), on the stand-in (benchmarks.job_runs: job runs that really run, billed as
EMR Serverless bills them): each stream's run its own job run, against the group's one; the
billed vCPU-hours of each way.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from devkit.limits_proxy import LimitsProxy
from devkit.stack import STATIC_ENV, local_stack, wait_active

from benchmarks.common import machine, plain_client, put_records
from benchmarks.processes import ProcessTree

REPO = Path(__file__).resolve().parents[1]
MIB = 1 << 20


def watched(args: list[str], env: dict[str, str] | None = None) -> tuple[float, ProcessTree, str]:
    """``kinesis-batch ARGS`` watched (``env`` over the environment): wall seconds, its process
    tree, its stdout."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "kinesis_batch.cli", *args], env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True,
    )  # fmt: skip
    with ProcessTree(process.pid) as tree:
        out, err = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"kinesis-batch {' '.join(args[:5])} ... failed ({process.returncode}): {err[-2000:]}")
    return time.monotonic() - started, tree, out


def make_streams(kinesis: Any, prefix: str, count: int, shards: int, records: int) -> list[str]:
    names = [f"{prefix}-{number:03d}" for number in range(count)]
    for name in names:
        kinesis.create_stream(StreamName=name, ShardCount=shards)
    for name in names:
        wait_active(kinesis, name)
        put_records(kinesis, name, records)
    return names


def singles(names: list[str], scratch: Path, at_once: int) -> dict[str, Any]:
    started = time.monotonic()

    def one(name: str) -> tuple[float, ProcessTree, str]:
        return watched(["run", "--stream", name, "--output", str(scratch / name), "--read-limits", "none", "--json"])

    with ThreadPoolExecutor(max_workers=at_once) as pool:
        done = list(pool.map(one, names))
    trees = [tree for _, tree, _ in done]
    return {
        "wall": time.monotonic() - started,
        "cpu": sum(tree.cpu_seconds for tree in trees),
        "peak": max(sum(rss for _, rss in tree.peaks.values()) for tree in trees),
        "jvms": sum(any(role == "jvm" for role, _ in tree.peaks.values()) for tree in trees),
        "records": sum(json.loads(out)["records"] for _, _, out in done),
    }


def group(names: list[str], scratch: Path, at_once: int) -> dict[str, Any]:
    path = write_group(scratch, names, "fleet")
    seconds, tree, out = watched(
        ["run", "--streams-file", str(path), "--group", "fleet", "--streams-at-once", str(at_once), "--json"]
    )
    report = json.loads(out)
    assert report["exit_code"] == 0, report
    return {
        "wall": seconds,
        "cpu": tree.cpu_seconds,
        "peak": sum(rss for _, rss in tree.peaks.values()),
        "jvms": int(any(role == "jvm" for role, _ in tree.peaks.values())),
        "records": sum(stream["records"] for stream in report["streams"]),
    }


def write_group(scratch: Path, names: list[str], name: str) -> Path:
    """A streams file of ``names`` (parquet folders in ``scratch``) and one group of them all."""
    path = scratch / f"{name}.toml"
    entries = "".join(
        f'[[streams]]\nstream = "{stream}"\noutput = "{scratch / stream}"\nread_limits = "none"\n\n' for stream in names
    )
    path.write_text(entries + f'[[groups]]\nname = "{name}"\nstreams = {json.dumps(names)}\n')
    return path


def many(names: list[str], scratch: Path, groups: int, limits: LimitsProxy) -> dict[str, float]:
    """``names`` in ``groups`` groups, each group's run a process, all started at once: the
    first run makes every stream's tables and leases and reads its records; the second finds
    nothing new (the hourly cost of planning, leasing, probing and releasing every stream; no
    Spark job starts); the third is the same hour with Kinesis behind ``limits`` (AWS's own)."""
    paths = [write_group(scratch, names[n::groups], f"many-{n}") for n in range(groups)]

    def hour(env: dict[str, str] | None = None) -> tuple[float, float, list[dict[str, Any]]]:
        started = time.monotonic()
        with ThreadPoolExecutor(len(paths)) as pool:
            ran = list(pool.map(lambda path: watched(_group_args(path), env), paths))
        reports = [json.loads(out) for _, _, out in ran]
        assert all(report["exit_code"] == 0 for report in reports), reports
        streams = [stream for report in reports for stream in report["streams"]]
        return time.monotonic() - started, sum(tree.cpu_seconds for _, tree, _ in ran), streams

    first, _, _ = hour()
    quiet, cpu, streams = hour()
    assert sum(stream["records"] for stream in streams) == 0, streams
    starts = [stream["timings"]["start"] for stream in streams]
    limited, _, behind = hour({"AWS_ENDPOINT_URL_KINESIS": limits.url})
    waits = [met for stream in behind for met in stream["control_plane"].values()]
    waited_streams = sum(bool(stream["control_plane"]) for stream in behind)
    return {"first": first, "quiet": quiet, "cpu": cpu, "start_mean": sum(starts) / len(starts),
            "start_max": max(starts), "limited": limited, "throttles": sum(limits.throttles.values()),
            "waited": sum(met["seconds"] for met in waits), "waited_streams": waited_streams}  # fmt: skip


def _group_args(path: Path) -> list[str]:
    return ["run", "--streams-file", str(path), "--group", path.stem, "--json"]


def job_run_ways(names: list[str], scratch: Path, at_once: int, archive: Path | None) -> dict[str, dict[str, Any]]:
    """The streams read as job runs: half as single runs (``at_once`` at a time), half as one
    group; wall seconds, CPU seconds here, job runs and their billed vCPU-hours."""
    from benchmarks.standin import stand_in

    bucket = f"kb-fleet-{os.getpid()}"
    plain_client("s3").create_bucket(Bucket=bucket)
    alone, grouped = names[: len(names) // 2], names[len(names) // 2 :]
    with stand_in(scratch / "job-runs", dict(os.environ), bucket, archive) as emr:
        os.environ["AWS_ENDPOINT_URL_EMR_SERVERLESS"] = emr.server.url
        os.environ["KINESIS_BATCH_EMR_SERVERLESS_POLL_SECONDS"] = "1"
        started = time.monotonic()

        def one(name: str) -> tuple[float, ProcessTree, str]:
            output = ["--format", "delta", "--output", f"s3://{bucket}/alone/{name}", "--read-limits", "none"]
            return watched(["run", "--stream", name, *output, *emr.flags(), "--json"])

        with ThreadPoolExecutor(max_workers=at_once) as pool:
            done = list(pool.map(one, alone))
        singles = {
            "wall": time.monotonic() - started,
            "cpu": sum(tree.cpu_seconds for _, tree, _ in done),
            "records": sum(json.loads(out)["records"] for _, _, out in done),
            "billed": emr.billed(),
        }
        path = scratch / "job-runs.toml"
        entries = "".join(
            f'[[streams]]\nstream = "{name}"\nformat = "delta"\noutput = "s3://{bucket}/grouped/{name}"\n'
            f'read_limits = "none"\nemr_serverless = {emr.entry()}\n\n'
            for name in grouped
        )
        path.write_text(entries + f'[[groups]]\nname = "jobs"\nstreams = {json.dumps(grouped)}\n')
        # The defaults: streams read as job runs take no local turn, so the group is one job run.
        seconds, tree, out = watched(["run", "--streams-file", str(path), "--group", "jobs", "--json"])
        report = json.loads(out)
        assert report["exit_code"] == 0, report
        group_billed = emr.billed()[len(singles["billed"]) :]
    return {
        f"{len(alone)} single runs, {at_once} at a time": singles,
        f"one group run of {len(grouped)}": {
            "wall": seconds,
            "cpu": tree.cpu_seconds,
            "billed": group_billed,
            "records": sum(s["records"] for s in report["streams"]),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6 streams of 200 records (CI)")
    parser.add_argument("--streams", type=int, help="streams (default 50; --quick 6)")
    parser.add_argument("--records", type=int, help="records per stream (default 2,000; --quick 200)")
    parser.add_argument("--at-once", type=int, default=4, help="single runs at once (default 4)")
    parser.add_argument("--many", type=int, help="streams planned in groups (default 200; --quick 12)")
    parser.add_argument("--groups", type=int, default=4, help="the groups they are in, run at once (default 4)")
    parser.add_argument("--job-runs", type=int, help="streams read as job runs, each way (default 10; --quick 3)")
    parser.add_argument("--archive", type=Path, help="an environment archive kinesis-batch package built (else built)")
    args = parser.parse_args(argv)
    count, records = args.streams or (6 if args.quick else 50), args.records or (200 if args.quick else 2_000)
    how_many = args.many or (12 if args.quick else 200)
    job_runs = args.job_runs or (3 if args.quick else 10)
    print(f"# fleet: {machine()}; {count} streams of 2 shards, {records:,} records of 1 KiB each", flush=True)
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as scratch, local_stack(("kinesalite",)) as stack:
        os.environ.update({**STATIC_ENV, **stack.env("kinesalite")})
        kinesis = plain_client("kinesis")
        alone = make_streams(kinesis, "alone", count, 2, records)
        grouped = make_streams(kinesis, "grouped", count, 2, records)
        figures = {
            f"{count} single runs, {args.at_once} at a time": singles(alone, Path(scratch), args.at_once),
            f"one group run of {count}": group(grouped, Path(scratch), 8),
        }
        with LimitsProxy(stack.kinesis["kinesalite"].url) as limits:  # AWS's own limits
            planning = many(make_streams(kinesis, "many", how_many, 2, 10), Path(scratch), args.groups, limits)
        jobs = job_run_ways(
            make_streams(kinesis, "jobs", 2 * job_runs, 2, records), Path(scratch), args.at_once, args.archive
        )
    print("| way | wall s | CPU s | peak MiB | Spark JVMs | records |")
    print("|---|---|---|---|---|---|")
    for way, f in figures.items():
        print(f"| {way} | {f['wall']:.1f} | {f['cpu']:.1f} | {f['peak'] / MIB:,.0f} | {f['jvms']} | {f['records']:,} |")
    single, one = figures.values()
    print(
        f"the group: {one['wall'] / single['wall']:.2f} of the wall time, {one['cpu'] / single['cpu']:.2f} of the "
        f"CPU seconds, {one['jvms']} Spark start against {single['jvms']}; the largest single run's peak "
        f"{single['peak'] / MIB:,.0f} MiB, {args.at_once} of them at once up to "
        f"{args.at_once * single['peak'] / MIB:,.0f}"
    )
    expected = count * records
    print(f"both read {expected:,} records: {single['records']:,} and {one['records']:,}")
    assert single["records"] == one["records"] == expected
    print(
        f"{how_many} streams in {args.groups} groups at once: the first run (tables, leases, 10 records each) "
        f"{planning['first']:.1f} s; an hour with nothing new (plan, lease, probe, release every stream) "
        f"{planning['quiet']:.1f} s, {planning['cpu']:.1f} CPU s, each stream's start {planning['start_mean']:.2f} s "
        f"on average, {planning['start_max']:.2f} s at most"
    )
    print(
        f"the same hour behind AWS's own control-plane limits: {planning['limited']:.1f} s, so the limits cost "
        f"{planning['limited'] - planning['quiet']:.1f} s; {planning['throttles']} throttles, "
        f"{planning['waited']:.1f} s waited by {planning['waited_streams']} of {how_many} streams"
    )
    print(
        "| way, every read an EMR Serverless job run | wall s | CPU s here | job runs | billed vCPU-hours | records |"
    )
    print("|---|---|---|---|---|---|")
    for way, f in jobs.items():
        vcpu = sum(hours for _, hours in f["billed"])
        print(f"| {way} | {f['wall']:.1f} | {f['cpu']:.1f} | {len(f['billed'])} | {vcpu:.3f} | {f['records']:,} |")
    alone, together = (sum(hours for _, hours in f["billed"]) for f in jobs.values())
    single, one = jobs.values()
    print(
        f"the group on EMR Serverless: {together / alone:.2f} of the billed vCPU-hours, "
        f"{one['wall'] / single['wall']:.2f} of the wall time ({len(one['billed'])} job run against "
        f"{len(single['billed'])})"
    )
    assert single["records"] == one["records"] == job_runs * records
    return 0


if __name__ == "__main__":
    sys.exit(main())
