"""``backfill``: read a stream again from an older position into an output of its own, on the
same library calls as the backfill DAG and Dagster's backfill job (kinesis_batch.orchestration).

Unless ``--move-main-checkpoints``, the backfill gets a lease table of its own
(``LEASE_TABLE-backfill-ID``), seeded at its start checkpoints, so it never conflicts with the
scheduled runs and leaves the main checkpoints where they are. Every value is checked before
anything is created; ``--backfill-id`` again resumes a backfill that failed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from kinesis_batch import defaults, orchestration
from kinesis_batch.cli.args import lease_table
from kinesis_batch.cli.run import catch_up_run, print_report, run_config
from kinesis_batch.config import KEEP, NONE, parse_time, validate_run_id
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.stopping import StopRequest


def backfill_command(
    args: argparse.Namespace, spark: Callable[[], Any] | None = None, stop: StopRequest | None = None
) -> int:
    from kinesis_batch.output import Output
    from kinesis_batch.run import new_run_id

    main_table = lease_table(args)
    if args.move_main_checkpoints and (args.start or args.shards):
        raise IllegalArgumentError(
            "--start and --shards do not apply with --move-main-checkpoints: that backfill reads on from the "
            "main checkpoints"
        )
    backfill_id = validate_run_id(args.backfill_id, setting="--backfill-id") if args.backfill_id else new_run_id()
    output = Output(args.format, args.output, args.catalog)  # checked before anything is created
    plan = orchestration.plan_backfill(
        stream=args.stream,
        main=output,
        backfill_id=backfill_id,
        format=output.format,
        output=output.output,
        table=main_table,
        until=parse_time(args.end, setting="--end") if args.end else None,
        move_main_checkpoints=args.move_main_checkpoints,
    )
    binding = NONE if plan.moves_main_checkpoints else KEEP  # the main table keeps its own output
    config = run_config(args, output=plan.output, table=plan.table, until=plan.until, output_binding=binding)
    run = catch_up_run(args, config, backfill_id, spark, stop)
    starts: dict[str, str] = {}
    if not plan.moves_main_checkpoints:
        shards = [shard.strip() for shard in (args.shards or "").split(",") if shard.strip()]
        start = args.start or defaults.BACKFILL_START
        starts = orchestration.seed_backfill(run, main_table=main_table, start=start, shards=shards)
        run.progress(f"backfill {backfill_id}: {len(starts)} shards from {start}, lease table {plan.table}")
    extra = {"backfill": {"table": plan.table, "output": plan.output, "starts": starts}}
    report = run.run()
    if not plan.moves_main_checkpoints:
        run.progress(f"the main checkpoints in {main_table} did not move; this backfill's are in {plan.table}")
    return print_report(args, report, "backfill", **extra)
