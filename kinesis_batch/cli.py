"""``kinesis-batch``: the command line, thin over the library.

Every user error ends with one line on stderr and a non-zero exit (2 for bad arguments and
invalid state, 3 for a lost lease, 4 for retryable failures); never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn

from kinesis_batch.config import (
    RunConfig,
    default_table,
    parse_initial_position,
    parse_time,
    validate_run_id,
    validate_stream_name,
    validate_table_name,
)
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError, KinesisBatchError, LeaseError, RetryableError
from kinesis_batch.output import FORMATS
from kinesis_batch.shards.reader import ReadLimits

EXIT_USAGE, EXIT_LEASE, EXIT_RETRYABLE = 2, 3, 4


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr like every other error."""

    def error(self, message: str) -> NoReturn:
        print(
            f"kinesis-batch: error: {self.prog.removeprefix('kinesis-batch').strip() or 'usage'}: {message} "
            f"(see {self.prog} --help)",
            file=sys.stderr,
        )
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kinesis-batch", description="Batch catch-up consumer for Kinesis")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="read every shard from its checkpoint to a bound, publish, commit")
    _stream_and_table(run)
    _output(run, required=True)
    run.add_argument("--initial-position", default="trim_horizon", help="trim_horizon | latest | at_timestamp=ISO8601")
    run.add_argument("--until", help="read records that arrived up to this ISO 8601 time (default: now)")
    run.add_argument("--lease-seconds", type=float, default=300.0, help="lease duration (renewed while running)")
    run.add_argument("--worker-id", help="this worker's id in the lease table (default: host-pid-random)")
    run.add_argument(
        "--allow-gaps", action="store_true", help="go on when retention trimmed unread records (recorded, not silent)"
    )
    run.add_argument("--spark-master", default="local[*]", help="Spark master (default local[*])")
    run.add_argument(
        "--read-limits",
        default="kinesis",
        help="kinesis: keep each shard under Kinesis' 5 GetRecords calls/s and 2 MiB/s (default); "
        "none: no pacing (emulators, benchmarks); CALLS,BYTES: your own per-shard pace per second",
    )
    run.add_argument(
        "--shards-per-task",
        type=int,
        help="shards one Spark task reads side by side (default: the plan spread over every task slot)",
    )
    run.add_argument("--run-id", help="the run's id, also its batch id (default: time + random)")
    # One step of a run whose other steps run elsewhere: the DAG's spark-submit of its read step.
    run.add_argument("--step", choices=("all", "read"), default="all", help=argparse.SUPPRESS)
    run.add_argument("--json", action="store_true", help="print the run report as JSON")

    plan = commands.add_parser("plan", help="what a run would read now, without reading or leasing")
    _stream_and_table(plan)
    plan.add_argument("--initial-position", default="trim_horizon", help="as for run")
    plan.add_argument("--until", help="as for run")
    plan.add_argument("--json", action="store_true")

    status = commands.add_parser("status", help="shards, lineage, leases and checkpoints")
    _stream_and_table(status)
    _output(status, required=False)  # given: the output's last batch too, beside the checkpoints
    status.add_argument("--json", action="store_true", help="print a JSON array, one object per shard")

    history = commands.add_parser("history", help="committed checkpoint moves")
    _stream_and_table(history)
    _output(history, required=False)
    history.add_argument("--run", help="only the moves of this run id")
    history.add_argument("--json", action="store_true")
    return parser


def _output(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--output",
        required=required,
        help="parquet: a folder (hive-style batch_id=... folders); delta: a path or s3:// URI of the table; "
        "iceberg: NAMESPACE.TABLE",
    )
    parser.add_argument("--format", choices=FORMATS, default="parquet", help="parquet (default), delta or iceberg")
    parser.add_argument("--catalog", help="iceberg: a pyiceberg catalog name (default: 'default', or the embedded one)")


def _sink(args: argparse.Namespace, table: str) -> Any:
    """The output the command names, or None when it names none (status, history)."""
    if args.output is None:
        if args.format != "parquet" or args.catalog:
            raise IllegalArgumentError("--format and --catalog need --output")
        return None
    from kinesis_batch.aws import s3_settings
    from kinesis_batch.output import open_sink

    return open_sink(args.format, args.output, app=table, stream=args.stream, catalog=args.catalog, s3=s3_settings())


def _stream_and_table(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stream", required=True, help="Kinesis stream name")
    parser.add_argument("--table", help="DynamoDB lease table (default: kinesis-batch-STREAM)")


def main(argv: Sequence[str] | None = None, *, spark: Callable[[], Any] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad argument (already said in one line)
        return int(exc.code or 0)
    try:
        if args.command == "run":
            return _run(args, spark)
        if args.command == "status":
            return _status(args)
        if args.command == "plan":
            return _plan(args)
        return _history(args)
    except (IllegalArgumentError, InvalidStateError) as exc:
        return _fail(exc, EXIT_USAGE)
    except LeaseError as exc:
        return _fail(exc, EXIT_LEASE)
    except RetryableError as exc:
        return _fail(exc, EXIT_RETRYABLE)
    except KinesisBatchError as exc:
        return _fail(exc, 1)
    except Exception as exc:  # e.g. a Spark failure: one line for the user, the details in the log
        logging.getLogger("kinesis_batch").debug("unexpected error", exc_info=True)
        return _fail(RuntimeError(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"), 1)


def _fail(exc: Exception, code: int) -> int:
    print(f"kinesis-batch: error: {exc}", file=sys.stderr)
    return code


def _run(args: argparse.Namespace, spark: Callable[[], Any] | None = None) -> int:
    """``run``; ``spark`` gives the session (spark-submit's own), else one is started lazily."""
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.run import CatchUpRun
    from kinesis_batch.spark.session import default_spark

    options: dict[str, Any] = {
        "stream": args.stream,
        "output": args.output,
        "table": _table(args),
        "initial_position": parse_initial_position(args.initial_position),
        "until": parse_time(args.until, setting="--until") if args.until is not None else None,
        "lease_seconds": args.lease_seconds,
        "spark_master": args.spark_master,
        "allow_gaps": args.allow_gaps,
        "read_limits": ReadLimits.parse(args.read_limits),
        "format": args.format,
        "catalog": args.catalog,
        "shards_per_task": args.shards_per_task,
    }
    if args.worker_id is not None:
        options["worker_id"] = args.worker_id
    config = RunConfig(**options)
    progress = (lambda _: None) if args.json else (lambda message: print(message, file=sys.stderr, flush=True))
    run = CatchUpRun(
        config,
        kinesis=kinesis_client(),
        dynamodb=dynamodb_client(),
        spark=spark or default_spark(config.spark_master),
        progress=progress,
        run_id=validate_run_id(args.run_id) if args.run_id is not None else None,
    )
    if args.step == "read":
        run.read()
        return 0
    report = run.run()
    if args.json:
        print(json.dumps(_report_json(report), indent=1))
        return 0
    for shard_id, owner in sorted(report.leased_elsewhere.items()):
        print(f"skipped {shard_id}: leased by {owner}")
    published = report.output if report.published else "nothing new to publish"
    shards, seconds = len(report.shards), report.seconds
    print(f"run {report.run_id}: {report.records} records from {shards} shards in {seconds:.1f} s; {published}")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.run import CatchUpRun

    config = RunConfig(
        stream=args.stream,
        output="(plan only)",
        table=_table(args),
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
    raise InvalidStateError("planning does not read: no Spark session")


def _report_json(report: Any) -> dict[str, Any]:
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


def _status(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.status import stream_status

    table = _table(args)
    status = stream_status(kinesis_client(), dynamodb_client(), args.stream, table, output=_sink(args, table))
    rows = status["shards"]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    summary, output = status["summary"], status["output"]
    print(
        f"stream {status['stream']} (lease table {status['table']}, retention {status['retention_hours']} h): "
        f"{summary['shards']} shards, {summary['open']} open, {summary['leased']} leased, "
        f"lag {_duration(summary['max_lag_seconds'])}, retention risk {summary['worst_retention_risk']}"
    )
    now = datetime.now(UTC).timestamp() * 1000
    print(f"{'shard':<22} {'parents':<43} {'state':<6} {'checkpoint':<58} {'lag':>7} {'risk':<8} {'owner':<24} pending")
    for row in rows:
        owner = row["lease_owner"] or "-"
        if row["lease_owner"] and row["lease_expires_at_ms"] and row["lease_expires_at_ms"] < now:
            owner += " (expired)"
        parents = ", ".join(row["parent_shard_ids"]) or "-"
        state = "closed" if row["closed"] else "open"
        checkpoint, pending = row["checkpoint"] or "-", row["pending_batch"] or "-"
        lag, risk = _duration(row["lag_seconds"]), row["retention_risk"]
        print(
            f"{row['shard_id']:<22} {parents:<43} {state:<6} {checkpoint:<58} {lag:>7} {risk:<8} {owner:<24} {pending}"
        )
    if output is not None:
        print(_output_line(output))
    return 0


def _output_line(output: dict[str, Any]) -> str:
    """The output's last batch in one line, and whether the checkpoints agree with it."""
    where = f"output ({output['format']}) {output['uri']}"
    if output["last_batch"] is None:
        return f"{where}: no batch of this consumer yet"
    line = (
        f"{where}: last batch {output['last_batch']} ({output['records']} records, committed {output['committed_at']})"
    )
    behind = output["disagreeing_shards"]
    if not behind:
        return f"{line}; the checkpoints agree"
    return (
        f"{line}; WARNING: the checkpoints of {', '.join(behind)} are not where that batch ended "
        "(a run stopped between the output commit and the checkpoint commit); the next run rolls them forward"
    )


def _duration(seconds: float) -> str:
    """A lag for people: 0s, 42s, 17m, 5.2h, 3.1d."""
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def _table(args: argparse.Namespace) -> str:
    """--table, or the stream's default table; the stream name is checked first."""
    validate_stream_name(args.stream)
    return validate_table_name(args.table if args.table is not None else default_table(args.stream))


def _history(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import dynamodb_client
    from kinesis_batch.status import history_rows

    validate_stream_name(args.stream)
    table = _table(args)
    rows = history_rows(dynamodb_client(), table, run_id=args.run)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    sink = _sink(args, table)
    if sink is not None:
        from kinesis_batch.leases.store import LeaseStore
        from kinesis_batch.status import output_status

        leases = LeaseStore(dynamodb_client(), table).list_leases()
        checkpoints = [{"shard_id": lease.lease_key, "checkpoint": str(lease.checkpoint)} for lease in leases]
        print(_output_line(output_status(sink, checkpoints)))
    for row in rows:
        moved = f"{row['from']} -> {row['to']}"
        run_id = row["run_id"] or "-"
        print(f"{row['committed_at']}  {run_id:<28} {row['shard_id']:<22} {moved}  ({row['records']} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
