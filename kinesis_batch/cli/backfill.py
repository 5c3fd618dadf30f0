"""``backfill``: read a stream again from an older position into an output of its own, on the
same library calls as the backfill DAG and Dagster's backfill job (kinesis_batch.backfill).

Unless ``--move-main-checkpoints``, the backfill gets a lease table of its own
(``LEASE_TABLE-backfill-ID``), seeded at its start checkpoints, so it never conflicts with the
scheduled runs and leaves the main checkpoints where they are. Every value is checked before
anything is created; ``--backfill-id`` again resumes a backfill that failed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from kinesis_batch import defaults
from kinesis_batch.cli.run import catch_up_run, print_report, run_config
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.parsers import parse_time, validate_run_id
from kinesis_batch.stopping import StopRequest


def backfill_command(
    args: argparse.Namespace, spark: Callable[[], Any] | None = None, stop: StopRequest | None = None
) -> int:
    from kinesis_batch.backfill.plan import plan_backfill
    from kinesis_batch.backfill.seed import seed_backfill
    from kinesis_batch.run import new_run_id

    if args.move_main_checkpoints and (args.start or args.shards):
        raise IllegalArgumentError(
            "--start and --shards do not apply with --move-main-checkpoints: that backfill reads on from the "
            "main checkpoints"
        )
    backfill_id = validate_run_id(args.backfill_id, setting="--backfill-id") if args.backfill_id else new_run_id()
    # --output names the backfill's own output; the main consumer is --stream's with --table.
    config, plan = plan_backfill(
        run_config(args),
        backfill_id,
        output=args.output,
        until=parse_time(args.end, setting="--end") if args.end else None,
        move_main_checkpoints=args.move_main_checkpoints,
    )
    run = catch_up_run(args, config, backfill_id, spark, stop)
    starts: dict[str, str] = {}
    if not plan.moves_main_checkpoints:
        shards = [shard.strip() for shard in (args.shards or "").split(",") if shard.strip()]
        start = args.start or defaults.BACKFILL_START
        starts = seed_backfill(run, plan, start=start, shards=shards)
        run.progress(f"backfill {backfill_id}: {len(starts)} shards from {start}, lease table {plan.table}")
    extra = {"backfill": {"table": plan.table, "output": plan.output, "starts": starts}}
    report = run.run()
    if not plan.moves_main_checkpoints:
        run.progress(f"the main checkpoints in {plan.main_table} did not move; this backfill's are in {plan.table}")
    return print_report(args, report, "backfill", **extra)
