"""``run`` and ``plan``: a catch-up run, and what one would read now."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kinesis_batch.cli.args import GROUPED, lease_table, stream_settings
from kinesis_batch.config import KEEP, MOVE, RunConfig
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.parsers import parse_initial_position, parse_time, validate_run_id
from kinesis_batch.planning import plan_report
from kinesis_batch.stopping import StopRequest

if TYPE_CHECKING:
    from kinesis_batch.run import CatchUpRun, RunReport


def run_command(
    args: argparse.Namespace, spark: Callable[[], Any] | None = None, stop: StopRequest | None = None
) -> int:
    """``run``; ``spark`` gives the Spark session (spark-submit's own), else one is started lazily;
    ``stop``: the signals' request to stop (kinesis_batch.stopping)."""
    if args.streams_file or args.group:
        from kinesis_batch.cli.group import group_command

        return group_command(args, _until(args.until), spark, stop or StopRequest(), verbose=args.verbose)
    if args.stream is None or args.output is None:
        missing = ", ".join(f"--{name}" for name in GROUPED if getattr(args, name) is None)
        raise IllegalArgumentError(
            f"run: the following arguments are required: {missing} (or --streams-file and --group)"
        )
    config = run_config(args, until=_until(args.until), output_binding=MOVE if args.move_output else KEEP)
    run = catch_up_run(args, config, validate_run_id(args.run_id) if args.run_id else None, spark, stop)
    return print_report(args, run.run(), "run")


def run_config(args: argparse.Namespace, **run: Any) -> RunConfig:
    """The RunConfig of a command that reads (``run``, ``backfill``): the stream's settings its
    flags give, its worker id and gaps, and ``run``'s fields (bound, output binding)."""
    if args.worker_id is not None:
        run["worker_id"] = args.worker_id
    return RunConfig(stream_settings(args), allow_gaps=args.allow_gaps, **run)


def catch_up_run(
    args: argparse.Namespace,
    config: RunConfig,
    run_id: str | None,
    spark: Callable[[], Any] | None = None,
    stop: StopRequest | None = None,
) -> CatchUpRun:
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.run import CatchUpRun
    from kinesis_batch.spark.place import ReadPlace

    progress = (lambda _: None) if args.json else (lambda message: print(message, file=sys.stderr, flush=True))
    place = ReadPlace.of(config)
    return CatchUpRun(
        config,
        kinesis=kinesis_client(),
        dynamodb=dynamodb_client(),
        spark=spark or place.engine(),
        progress=progress,
        run_id=run_id,
        stop=stop,
        place=place,
    )


def print_report(args: argparse.Namespace, report: RunReport, what: str, **extra: Any) -> int:
    """The run's report: its lines (``what`` names the run), or with --json the whole report
    and ``extra``."""
    if args.json:
        print(json.dumps({**report.to_json(), **extra}, indent=1))
    else:
        print("\n".join(report.lines(what)))
    return 0


def plan_command(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.run import plan_now

    plan = plan_now(
        kinesis_client(),
        dynamodb_client(),
        args.stream,
        table=lease_table(args),
        initial=parse_initial_position(args.initial_position),
        until=_until(args.until),
    )
    if args.json:
        print(json.dumps(plan_report(plan), indent=1))
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
    print(f"{len(plan.ranges)} shards to read, {len(plan.finished)} finished")
    return 0


def _until(text: str | None) -> datetime | None:
    return parse_time(text, setting="--until") if text is not None else None
