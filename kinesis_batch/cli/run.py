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
    from kinesis_batch.serverless.gathering import JobRunGathering
    from kinesis_batch.spark.engine import Engine
    from kinesis_batch.spark.place import ReadPlace


def run_command(
    args: argparse.Namespace, spark: Callable[[], Any] | None = None, stop: StopRequest | None = None
) -> int:
    """``run``; ``spark`` gives the Spark session (spark-submit's own), else one is started lazily;
    ``stop``: the signals' request to stop (kinesis_batch.stopping)."""
    if args.stream is None or args.output is None:
        missing = ", ".join(f"--{name}" for name in GROUPED if getattr(args, name) is None)
        raise IllegalArgumentError(
            f"run: the following arguments are required: {missing} (or --streams-file and --group)"
        )
    config = run_config(args, until=until_of(args), output_binding=MOVE if args.move_output else KEEP)
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
    *,
    clients: tuple[Any, Any] | None = None,
    engines: Callable[[ReadPlace], Callable[[], Engine]] | None = None,
    gathering: JobRunGathering | None = None,
    label: str = "",
) -> CatchUpRun:
    """The command line's run of ``config``: its progress on stderr (none with --json; each line
    after ``label:``, a group's stream); ``clients``: (kinesis, dynamodb), built from the
    environment when not given; ``engines``: the session of the read's place, shared (a group's),
    unless ``spark`` is given; ``gathering``: a group's, for one job run of its streams' reads."""
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.run import CatchUpRun
    from kinesis_batch.spark.place import ReadPlace

    said = f"{label}: " if label else ""
    progress = (lambda _: None) if args.json else (lambda line: print(f"{said}{line}", file=sys.stderr, flush=True))
    place = ReadPlace.of(config)
    kinesis, dynamodb = clients or (kinesis_client(), dynamodb_client())
    return CatchUpRun(
        config,
        kinesis=kinesis,
        dynamodb=dynamodb,
        spark=spark or (engines or ReadPlace.engine)(place),
        progress=progress,
        run_id=run_id,
        stop=stop,
        place=place,
        gathering=gathering,
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
        until=until_of(args),
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


def until_of(args: argparse.Namespace) -> datetime | None:
    """The run's bound, --until (None: the tip)."""
    return parse_time(args.until, setting="--until") if args.until is not None else None
