"""The read step as an EMR Serverless job run against local Spark, on the same backlog: what the job
run adds.

One stream, read twice into two Delta tables on S3 (moto), each with its own lease table: first
by ``kinesis-batch run`` with local Spark in the process, then by the same command with the read
step as a job run on the EMR Serverless stand-in (tools/devkit/emr_serverless.py: spark-submit on
this machine, a bare Python 3.11 that gets kinesis-batch from the environment archive, which the
job fetches from S3 and unpacks first). For each: wall seconds, the report's steps, and CPU
seconds of the orchestrating process and of the job. The stand-in's job runs on the same two
cores as the orchestrator; on AWS the job has workers of its own, but starts them first (its
start-up there is not measured here).

    .venv/bin/python -m benchmarks.job_run            # 100,000 records of 1 KiB, 4 shards
    .venv/bin/python -m benchmarks.job_run --quick    # 2,000 (CI)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from devkit.stack import STATIC_ENV, local_stack, wait_active

from benchmarks.common import REPO, machine, plain_client, put_records
from benchmarks.processes import ProcessTree
from benchmarks.standin import stand_in


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 records (CI)")
    parser.add_argument("--records", type=int, help="records of 1 KiB (default 100,000; --quick 2,000)")
    parser.add_argument("--archive", type=Path, help="an environment archive kinesis-batch package built (else built)")
    args = parser.parse_args(argv)
    records = args.records or (2_000 if args.quick else 100_000)
    print(f"# job_run: {machine()}; {records:,} records of 1 KiB in 4 shards", flush=True)
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as scratch, local_stack(("kinesalite",)) as stack:
        env = {**STATIC_ENV, **stack.env("kinesalite")}
        os.environ.update(env)
        plain_client("s3").create_bucket(Bucket="bench-job-run")
        with stand_in(Path(scratch), env, "bench-job-run", args.archive) as emr:
            os.environ["AWS_ENDPOINT_URL_EMR_SERVERLESS"] = emr.server.url
            os.environ["KINESIS_BATCH_EMR_SERVERLESS_POLL_SECONDS"] = "1"
            kinesis = plain_client("kinesis")
            stream = "bench-job-run"
            kinesis.create_stream(StreamName=stream, ShardCount=4)
            wait_active(kinesis, stream)
            put_records(kinesis, stream, records)
            local = _run(stream, "local", (), records, server_pid=None)
            remote = _run(stream, "job", tuple(emr.flags()), records, server_pid=emr.server.pid)
            (run,) = emr.client().list_job_runs(applicationId=emr.application)["jobRuns"]
            done = emr.client().get_job_run(applicationId=emr.application, jobRunId=run["id"])["jobRun"]
    head = "| read step | wall s | start s | read s | publish + commit s | CPU s here | CPU s of the job |"
    print(f"\n{head}\n|{'---|' * 7}")
    for name, row in (("local Spark in the process", local), ("EMR Serverless job run (stand-in)", remote)):
        t = row["timings"]
        print(
            f"| {name} | {row['wall']:.1f} | {t.get('start', 0):.1f} | {t.get('read', 0):.1f} | "
            f"{t.get('publish', 0) + t.get('commit', 0):.1f} | {row['cpu']:.1f} | {row['job_cpu']:.1f} |"
        )
    print(
        f"\nthe job run added {remote['wall'] - local['wall']:.1f} s of wall time "
        f"({remote['timings'].get('read', 0) - local['timings'].get('read', 0):.1f} s of it in the read step); "
        f"the job ran {done.get('totalExecutionDurationSeconds')} s and billed "
        f"{done['billedResourceUtilization']['vCPUHour']} vCPU-hours"
    )
    print(f"both read {records:,} records: {local['records']:,} and {remote['records']:,}")
    return 0


def _run(stream: str, name: str, extra: tuple[str, ...], records: int, *, server_pid: int | None) -> dict[str, Any]:
    """``kinesis-batch run`` into a Delta table of its own on S3, its lease table its own."""
    output = ("--format", "delta", "--output", f"s3://bench-job-run/tables/{name}", "--table", f"bench-{name}")
    command = [sys.executable, "-m", "kinesis_batch.cli", "run", "--stream", stream, *output, "--read-limits", "none"]
    started = time.monotonic()
    process = subprocess.Popen(
        [*command, "--json", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
    )
    with ProcessTree(process.pid) as here:
        if server_pid is not None:
            with ProcessTree(server_pid) as job:
                out, err = process.communicate()
        else:
            job = None
            out, err = process.communicate()
    wall = time.monotonic() - started
    if process.returncode != 0:
        raise SystemExit(f"kinesis-batch run ({name}) failed ({process.returncode}): {err[-2000:]}")
    report = json.loads(out)
    if report["records"] != records:
        raise SystemExit(f"{name}: read {report['records']} records, put {records}")
    return {
        "wall": wall,
        "timings": report["timings"],
        "records": report["records"],
        "cpu": here.cpu_seconds,
        "job_cpu": job.cpu_seconds if job else 0.0,
    }


if __name__ == "__main__":
    raise SystemExit(main())
