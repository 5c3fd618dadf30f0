"""``run`` and ``plan``: a catch-up run, and what one would read now."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kinesis_batch.cli.args import lease_table
from kinesis_batch.config import RunConfig, parse_initial_position, parse_time, validate_run_id
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.shards.reader import ReadLimits

if TYPE_CHECKING:
    from kinesis_batch.run import CatchUpRun, RunReport


def run_command(args: argparse.Namespace, spark: Callable[[], Any] | None = None) -> int:
    """``run``; ``spark`` gives the SparkContext (spark-submit's own), else one is started lazily."""
    config = run_config(
        args,
        output=args.output,
        table=lease_table(args),
        initial_position=parse_initial_position(args.initial_position),
        until=parse_time(args.until, setting="--until") if args.until is not None else None,
    )
    run = catch_up_run(args, config, args.run_id, spark)
    if args.step == "read":  # the spark-submitted read step: the submitting process renews the leases
        run.read()
        return 0
    return print_report(args, run.run(), "run")


def run_config(args: argparse.Namespace, **settings: Any) -> RunConfig:
    """The RunConfig of a command that reads (``run``, ``backfill``): its reading options, and
    ``settings`` (output, table, bound...)."""
    options: dict[str, Any] = {
        "stream": args.stream,
        "lease_seconds": args.lease_seconds,
        "spark_master": args.spark_master,
        "allow_gaps": args.allow_gaps,
        "read_limits": ReadLimits.parse(args.read_limits),
        "format": args.format,
        "catalog": args.catalog,
        "shards_per_task": args.shards_per_task,
        **settings,
    }
    if args.worker_id is not None:
        options["worker_id"] = args.worker_id
    return RunConfig(**options)


def catch_up_run(
    args: argparse.Namespace, config: RunConfig, run_id: str | None, spark: Callable[[], Any] | None = None
) -> CatchUpRun:
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.run import CatchUpRun
    from kinesis_batch.spark.session import default_spark

    progress = (lambda _: None) if args.json else (lambda message: print(message, file=sys.stderr, flush=True))
    return CatchUpRun(
        config,
        kinesis=kinesis_client(),
        dynamodb=dynamodb_client(),
        spark=spark or default_spark(config.spark_master),
        progress=progress,
        run_id=validate_run_id(run_id) if run_id is not None else None,
    )


def print_report(args: argparse.Namespace, report: RunReport, what: str, **extra: Any) -> int:
    """The run's report: one line (``what`` names the run), or with --json the whole report
    and ``extra``."""
    if args.json:
        print(json.dumps({**report_json(report), **extra}, indent=1))
        return 0
    for shard_id, owner in sorted(report.leased_elsewhere.items()):
        print(f"skipped {shard_id}: leased by {owner}")
    published = report.output if report.published else "nothing new to publish"
    shards, seconds = len(report.shards), report.seconds
    print(f"{what} {report.run_id}: {report.records} records from {shards} shards in {seconds:.1f} s; {published}")
    return 0


def plan_command(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.run import CatchUpRun

    config = RunConfig(
        stream=args.stream,
        output="(plan only)",
        table=lease_table(args),
        initial_position=parse_initial_position(args.initial_position),
        until=parse_time(args.until, setting="--until") if args.until is not None else None,
    )
    plan = CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=_no_spark).plan()
    body: dict[str, Any] = {
        "stream": plan.stream,
        "until": plan.until.isoformat() if plan.until else None,
        "ranges": [
            {
                "shard_id": r.shard_id,
                "start": str(r.start),
                "wave": r.wave,
                "lineage_depth": r.depth,
                "closed": r.closed,
                "after_parents": list(r.planned_parents),
            }
            for r in plan.ranges
        ],
        "finished": list(plan.finished),
        "leased_elsewhere": dict(plan.leased_elsewhere),
        "waiting": {k: list(v) for k, v in plan.waiting.items()},
        "pending_recovery": dict(plan.pending),
    }
    if args.json:
        print(json.dumps(body, indent=1))
        return 0
    for r in plan.ranges:
        after = f" (after {', '.join(r.planned_parents)} reach SHARD_END)" if r.planned_parents else ""
        print(f"wave {r.wave}  {r.shard_id:<22} from {r.start}{after}")
    for shard_id, owner in plan.leased_elsewhere.items():
        print(f"skip     {shard_id:<22} leased by {owner}")
    for shard_id, parents in plan.waiting.items():
        print(f"wait     {shard_id:<22} for {', '.join(parents)}")
    for shard_id, batch in plan.pending.items():
        print(f"recover  {shard_id:<22} pending batch {batch}")
    print(f"{len(body['ranges'])} shards to read, {len(body['finished'])} finished")
    return 0


def _no_spark() -> Any:
    raise InvalidStateError("planning does not read: no SparkContext")


def report_json(report: RunReport) -> dict[str, Any]:
    return {
        "run_id": report.run_id,
        "batch_id": report.batch_id,
        "published": report.published,
        "output": report.output,
        "records": report.records,
        "seconds": round(report.seconds, 3),
        "timings": report.timings,
        "tasks": report.tasks,
        "failed_task_attempts": report.failed_task_attempts,
        "shards": [
            {
                "shard_id": s.shard_id,
                "start": str(s.start),
                "end": str(s.end),
                "records": s.records,
                "reached_shard_end": s.reached_shard_end,
            }
            for s in report.shards
        ],
        "recovered": report.recovered,
        "leased_elsewhere": report.leased_elsewhere,
        "waiting": {k: list(v) for k, v in report.waiting.items()},
    }
