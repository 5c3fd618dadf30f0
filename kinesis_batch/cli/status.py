"""``status`` and ``history``: where the consumer is, and how its checkpoints moved."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kinesis_batch.alerts import duration
from kinesis_batch.cli.args import output_sink, stream_table
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError
from kinesis_batch.landing import Landing
from kinesis_batch.output.datafiles import MIB
from kinesis_batch.parsers import validate_role_arn, validate_run_id

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient

    from kinesis_batch.status import FilesStatus, OutputStatus, PublishesTo


def stream_kinesis(args: argparse.Namespace) -> KinesisClient:
    """Kinesis as --stream's account has it: with --role-arn's credentials when given (checked,
    then assumed now: a role that cannot be assumed is one line, exit 2), else this account's.
    The lease and history tables stay this account's, with its own client."""
    from kinesis_batch.aws import assumed_role, kinesis_client

    if not args.role_arn:
        return kinesis_client()
    return assumed_role(kinesis_client(), validate_role_arn(args.role_arn), args.external_id)


def status_command(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import dynamodb_client
    from kinesis_batch.status import stream_status

    if args.streams_file:
        from kinesis_batch.cli.fleet import fleet_command

        return fleet_command(args)
    if args.stream is None:
        raise IllegalArgumentError("status: the following arguments are required: --stream (or --streams-file)")
    table = stream_table(args)
    status = stream_status(
        stream_kinesis(args), dynamodb_client(), args.stream, table, output=output_sink(args, table),
        small_file_mb=args.small_file_mb,
    )  # fmt: skip
    if args.json:
        print(json.dumps([shard.to_json() for shard in status.shards], indent=1))
        return 0
    summary = status.summary()
    print(
        f"stream {status.stream} (lease table {status.table}, retention {status.retention_hours} h): "
        f"{summary['shards']} shards, {summary['open']} open, {summary['leased']} leased, "
        f"lag {duration(status.max_lag_seconds)}, retention risk {status.worst_retention_risk.value}"
    )
    now = datetime.now(UTC).timestamp() * 1000
    print(f"{'shard':<22} {'parents':<43} {'state':<6} {'checkpoint':<58} {'lag':>7} {'risk':<8} {'owner':<24} pending")
    for shard in status.shards:
        owner = shard.lease_owner or "-"
        if shard.lease_owner and not shard.leased_at(now):
            owner += " (expired)"
        parents = ", ".join(shard.parent_shard_ids) or "-"
        state = "closed" if shard.closed else "open"
        checkpoint, pending = str(shard.checkpoint or "-"), shard.pending_batch or "-"
        lag, risk = duration(shard.lag_seconds), shard.retention_risk.value
        print(
            f"{shard.shard_id:<22} {parents:<43} {state:<6} {checkpoint:<58} {lag:>7} {risk:<8} {owner:<24} {pending}"
        )
    for shard in status.shards:
        if shard.settle_warning:
            print(f"WARNING: {shard.settle_warning}")
    bound = _publishes_to_line(status.publishes_to)
    if bound:
        print(bound)
    if status.output is not None:
        print(_output_line(status.output))
        if status.output.files is not None:
            print(_table_line(status.output.files))
            if status.output.files.small_files:
                print(f"WARNING: {status.output.files.small_files}")
    return 0


def _publishes_to_line(bound: PublishesTo | None) -> str:
    """Where this consumer publishes, and its last move, in one line ('' before any is recorded)."""
    if bound is None or not bound.output:
        return ""
    letters = f" (dead letters: {bound.dead_letter_output})" if bound.dead_letter_output else ""
    line = f"publishes to {bound.output}{letters}"
    if not bound.moves:
        return line
    move = bound.moves[-1]
    return (
        f"{line}; moved from {move.from_output} at {move.moved_at.isoformat()} by {move.moved_by}, starting at the "
        f"checkpoints of {len(move.checkpoints)} shards then"
    )


def _table_line(table: FilesStatus) -> str:
    """The output's files, and its last maintenance, in one line."""
    stats = table.stats
    files = (
        f"  {stats.files} files in {stats.partitions} partitions, {stats.bytes / MIB:,.1f} MiB, "
        f"mean {stats.mean_file_bytes / MIB:,.2f} MiB"
    )
    last = table.last_maintenance
    if last is None:
        return f"{files}; never maintained (kinesis-batch maintain)"
    return (
        f"{files}; last maintained {last.finished_at.isoformat()}: {last.compacted.files_removed} files compacted "
        f"into {last.compacted.files_added}, {last.versions_expired} versions expired, "
        f"{last.orphans_removed} orphans removed"
    )


def _output_line(output: OutputStatus) -> str:
    """The output's last batch in one line, and whether the checkpoints agree with it."""
    where = f"output ({output.format}) {output.uri}"
    if output.last_batch is None:
        return f"{where}: no batch of this consumer yet"
    landing = output.landing
    landed = f", {landing.said()}" if landing else ""
    committed = output.committed_at.isoformat() if output.committed_at else None
    line = f"{where}: last batch {output.last_batch} ({output.records} records{landed}, committed {committed})"
    behind = output.disagreeing_shards
    if not behind:
        return f"{line}; the checkpoints agree"
    return (
        f"{line}; WARNING: the checkpoints of {', '.join(behind)} are not where that batch ended "
        "(a run stopped between the output commit and the checkpoint commit); the next run rolls them forward"
    )


def history_command(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import dynamodb_client
    from kinesis_batch.status import history_rows

    table = stream_table(args)
    if args.runs:
        return _runs(args, table)
    if args.run:
        validate_run_id(args.run, setting="--run")
    rows = history_rows(stream_kinesis(args), dynamodb_client(), args.stream, table, run_id=args.run)
    if args.run and not rows:
        raise InvalidStateError(
            f"--run {args.run}: no batch of that run was committed in {table} "
            f"(kinesis-batch history --stream {args.stream} --runs lists the runs that were)"
        )
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    sink = output_sink(args, table)
    if sink is not None:
        from kinesis_batch.leases.store import LeaseStore
        from kinesis_batch.status import output_status

        leases = LeaseStore(dynamodb_client(), table).list_leases()
        last, _ = output_status(sink, {lease.lease_key: lease.checkpoint for lease in leases})
        print(_output_line(last))
    if not rows:
        print(f"no batch committed in {table} yet: each run's checkpoint moves appear here once it commits")
    for row in rows:
        moved = f"{row['from']} -> {row['to']}"
        run_id = row["run_id"] or "-"
        landed = f", {row['dead_letters']} dead letters" if "dead_letters" in row else ""
        print(f"{row['committed_at']}  {run_id:<28} {row['shard_id']:<22} {moved}  ({row['records']} records{landed})")
    return 0


def _runs(args: argparse.Namespace, table: str) -> int:
    from kinesis_batch.aws import dynamodb_client
    from kinesis_batch.cost import ReadCost
    from kinesis_batch.status import run_rows

    if args.run:
        raise IllegalArgumentError("--runs lists every run; --run names one, leave one of them out")
    rows = run_rows(stream_kinesis(args), dynamodb_client(), args.stream, table)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for row in rows:
        lag = row["lag_at_start_ms"]
        began = "lag not recorded" if lag is None else f"began {duration(lag / 1000)} behind"
        counts = f"{row['records']:>9} records  {row['shards']:>3} shards"
        if "dead_letters" in row:
            counts += f"  {row['rows']:>9} rows  {row['dead_letters']:>7} dead letters"
        if row.get("tables"):  # routed: each table's rows
            counts += "  " + ", ".join(f"{route} {rows}" for route, rows in row["tables"].items())
        landing = Landing.from_json(row)
        if landing is not None and landing.all_changes:  # a stream of changes: what they did
            counts += "  changes: " + ", ".join(f"{n} {kind}" for kind, n in landing.all_changes.items())
        cost = ReadCost.from_json(row.get("cost"))
        billed = f"  EMR Serverless job run {cost.job_run_id}: {cost.said()}" if cost else ""
        for job in row.get("job_runs", []):  # the others billed to the run: cancelled, failed, read nothing
            if cost is None or job["job_run_id"] != cost.job_run_id:
                other = ReadCost.from_json(job)
                assert other is not None
                billed += f"  EMR Serverless job run {other.job_run_id} {job['state']}: {other.said()}"
        if not row["committed"]:
            counts, began = "nothing committed", ""
        waited = row.get("control_plane")
        if waited:  # the account's limits shared by too many runs at once
            billed += f"  waited {waited['seconds']:.1f} s on the control plane ({waited['throttles']} throttles)"
        print(f"{row['committed_at']}  {row['run']:<28} {counts}  {began}{billed}")
    return 0
