"""``reset``, ``import-kcl`` and ``export-kcl``: the commands that move every checkpoint of a
consumer at once, each recorded in its history, none ever run implicitly."""

from __future__ import annotations

import argparse

from kinesis_batch.cli.args import lease_table
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.parsers import parse_initial_position


def reset_command(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.leases.store import LeaseStore
    from kinesis_batch.reset import operator, reset

    table = lease_table(args)
    start = parse_initial_position(args.start)
    if not args.yes:
        raise IllegalArgumentError(
            f"reset replaces every checkpoint of {table} with {start} (the old ones stay in its history): "
            "add --yes to do it"
        )
    report = reset(kinesis_client(), LeaseStore(dynamodb_client(), table), args.stream, start, who=operator())
    print(report.line())
    return 0


def handover_command(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.kcl.handover import export_kcl, import_kcl
    from kinesis_batch.leases.store import LeaseStore
    from kinesis_batch.reset import operator

    carry = import_kcl if args.command == "import-kcl" else export_kcl
    store = LeaseStore(dynamodb_client(), lease_table(args))
    done = carry(kinesis_client(), store, args.kcl_table, args.stream, who=operator(), watch_seconds=args.watch_seconds)
    print(done.line())
    return 0
