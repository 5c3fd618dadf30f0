"""The command line's arguments: the parser, and what several commands read from them."""

from __future__ import annotations

import argparse
import sys
from dataclasses import MISSING
from typing import TYPE_CHECKING, Any, NoReturn

from kinesis_batch import defaults
from kinesis_batch.access.needs import PRINCIPALS
from kinesis_batch.errors import BAD_INPUT, IllegalArgumentError
from kinesis_batch.maintenance.settings import MAINTAIN_OPTIONS
from kinesis_batch.output.formats import FORMATS
from kinesis_batch.parsers import (
    default_table,
    stream_of_arn,
    validate_stream_name,
    validate_table_name,
)
from kinesis_batch.serverless.settings import ServerlessSettings
from kinesis_batch.settings import CLI, OPTIONS, StreamSettings, flag, kind, offered

if TYPE_CHECKING:
    from kinesis_batch.output import Output, Stored


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr like every other error."""

    def error(self, message: str) -> NoReturn:
        print(
            f"kinesis-batch: error: {self.prog.removeprefix('kinesis-batch').strip() or 'usage'}: {message} "
            f"(see {self.prog} --help)",
            file=sys.stderr,
        )
        raise SystemExit(BAD_INPUT.exit_code)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kinesis-batch", description="Batch catch-up consumer for Kinesis")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="read every shard from its checkpoint to a bound, publish, commit")
    _settings(run, optional=GROUPED)
    grouped = run.add_argument_group("a group of streams (each with its own settings in the streams file)")
    grouped.add_argument("--streams-file", metavar="F", help="a streams file ([[streams]] and [[groups]] tables)")
    grouped.add_argument("--group", metavar="G", help="--streams-file: the group whose streams this run reads")
    grouped.add_argument(
        "--streams-at-once",
        type=_positive_int,
        default=defaults.STREAMS_AT_ONCE,
        help=f"--group: streams read side by side here, sharing the run's Spark (default {defaults.STREAMS_AT_ONCE})",
    )
    grouped.add_argument(
        "--streams-per-job-run",
        type=_positive_int,
        default=defaults.STREAMS_PER_JOB_RUN,
        help="--group: the most streams one EMR Serverless job run reads; more are split evenly "
        f"(default {defaults.STREAMS_PER_JOB_RUN})",
    )
    run.add_argument("--until", help="read records that arrived up to this ISO 8601 time (default: now)")
    _reading(run)
    run.add_argument(
        "--move-output",
        action="store_true",
        help="publish to this --output from now on, though the lease table records another (the move, and the "
        "checkpoints the new output starts from, are kept in the history)",
    )
    run.add_argument("--run-id", help="the run's id, also its batch id (default: time + random)")
    run.add_argument("--json", action="store_true", help="print the run report as JSON")

    policy = commands.add_parser(
        "iam-policy", help="the least-privilege IAM policies of a stream's (or a streams file's) runs, per principal"
    )
    _settings(policy, optional=GROUPED)
    policy.add_argument("--streams-file", metavar="F", help="instead of --stream: every stream of a streams file")
    policy.add_argument("--group", metavar="G", help="--streams-file: only this group's streams")
    policy.add_argument(
        "--for",
        dest="principal",
        choices=PRINCIPALS,
        help="one principal's document (default: every principal's, by name)",
    )
    policy.add_argument("--account", help="the consumer's AWS account id (default: the environment's, from STS)")
    policy.add_argument("--region", help="the consumer's region (default: the environment's)")
    policy.add_argument("--kms-key", default="", help="--stream: the key ARN the stream is encrypted with (SSE-KMS)")
    policy.add_argument(
        "--backfills",
        action="store_true",
        help="and what backfills touch: their lease tables and outputs beside the main ones, any backfill id",
    )

    plan = commands.add_parser("plan", help="what a run would read now, without reading or leasing")
    _stream_and_table(plan)
    plan.add_argument("--initial-position", default=defaults.INITIAL_POSITION, help=_help("initial_position"))
    plan.add_argument("--until", help="as for run")
    plan.add_argument("--json", action="store_true")

    status = commands.add_parser("status", help="shards, lineage, leases and checkpoints")
    _stream_and_table(status, required=False)
    _their_stream(status)
    status.add_argument(
        "--streams-file",
        metavar="F",
        help="instead of --stream: every stream of a streams file and its group, one line each, worst first",
    )
    _output(status, required=False)  # given: the output's last batch too, beside the checkpoints
    status.add_argument(
        "--small-file-mb",
        type=float,
        default=defaults.SMALL_FILE_MB,
        help=f"warn when the output's recent partitions hold files smaller than this on average "
        f"(default {defaults.SMALL_FILE_MB})",
    )
    status.add_argument("--json", action="store_true", help="print a JSON array, one object per shard")

    history = commands.add_parser("history", help="committed checkpoint moves")
    _stream_and_table(history)
    _their_stream(history)
    _output(history, required=False)
    history.add_argument("--run", help="only the moves of this run id")
    history.add_argument(
        "--runs", action="store_true", help="one line per run (the newest 48): records, shards, lag when it began"
    )
    history.add_argument("--json", action="store_true")

    backfill = commands.add_parser(
        "backfill", help="read the stream again from an older position into an output of its own"
    )
    _settings(backfill, table_help="the main lease table (default: kinesis-batch-STREAM)")
    backfill.add_argument("--shards", help="shard ids, comma-separated (default: every shard)")
    backfill.add_argument(
        "--start",
        help="trim_horizon (default) | at_timestamp=ISO8601 | run=RUN_ID (the checkpoints before that run, "
        "from the history) | after_sequence=N (one shard)",
    )
    backfill.add_argument("--end", help="read records that arrived up to this ISO 8601 time (default: the tip)")
    backfill.add_argument(
        "--move-main-checkpoints",
        action="store_true",
        help="read on from the main checkpoints and move them (default: a lease table of the backfill's own)",
    )
    backfill.add_argument(
        "--backfill-id", help="the backfill's id, also its batch id (default: time + random); again to resume one"
    )
    _reading(backfill)
    backfill.add_argument("--json", action="store_true", help="print the run report as JSON")
    _handover(commands)
    _package(commands)
    _maintain(commands)
    for command in commands.choices.values():
        command.add_argument(
            "--verbose", action="store_true", help="an unexpected error's traceback on stderr, not in a log file"
        )
    return parser


def _package(commands: argparse._SubParsersAction[_Parser]) -> None:
    from kinesis_batch.environment import ARCHITECTURES

    package = commands.add_parser(
        "package", help="the executors' environment: kinesis-batch and its dependencies in one archive for Spark"
    )
    package.add_argument("--python", required=True, help="the executors' Python version, e.g. 3.11")
    package.add_argument("--arch", required=True, choices=ARCHITECTURES, help="the executors' architecture")
    package.add_argument("--output", required=True, help="a folder or s3:// prefix to write the archive to")
    package.add_argument("--replace", action="store_true", help="write the archive again where one of its name is")
    package.add_argument("--json", action="store_true", help="print the archive and its Spark settings as JSON")


def _maintain(commands: argparse._SubParsersAction[_Parser]) -> None:
    maintain = commands.add_parser(
        "maintain", help="compact an output's small files, expire its old versions, remove its orphan files"
    )
    _output(maintain, required=True)
    for each in MAINTAIN_OPTIONS:
        maintain.add_argument(flag(each), type=kind(each), default=each.default, help=each.metadata["help"])
    _stop_timeout(maintain, "between two of its steps")
    maintain.add_argument("--json", action="store_true", help="print the maintenance report as JSON")


def _handover(commands: argparse._SubParsersAction[_Parser]) -> None:
    """The commands that move every checkpoint at once: never implicit."""
    reset = commands.add_parser(
        "reset", help="start a consumer over from one position; the old checkpoints stay in the history"
    )
    _stream_and_table(reset)
    reset.add_argument("--start", required=True, help="trim_horizon | latest | at_timestamp=ISO8601")
    reset.add_argument("--yes", action="store_true", help="do it (every checkpoint of the table is replaced)")
    for name, verb in (("import-kcl", "create a lease table from"), ("export-kcl", "write the checkpoints into")):
        handover = commands.add_parser(name, help=f"{verb} a stopped KCL application's lease table")
        _stream_and_table(handover)
        handover.add_argument("--kcl-table", required=True, help="the KCL application's lease table (its name)")
        handover.add_argument(
            "--watch-seconds",
            type=float,
            default=30.0,
            help="how long no leaseCounter of the KCL table may move (default 30: three of KCL's failover periods)",
        )


def _output(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument("--output", required=required, help=_help("output"))
    parser.add_argument(
        "--format", choices=FORMATS, help=_help("format") + "; an s3:// output with none given is a Delta table"
    )
    parser.add_argument("--catalog", help=_help("catalog"))


def output_of(args: argparse.Namespace) -> Output:
    """The output the command names with --output, --format (the one format the location can be
    when none is given, else the default) and --catalog."""
    from kinesis_batch.output import Output
    from kinesis_batch.output.formats import implied

    return Output(args.format or implied(args.output) or defaults.FORMAT, args.output, args.catalog)


def output_sink(args: argparse.Namespace, table: str) -> Stored | None:
    """The output the command names, or None when it names none (status, history)."""
    if args.output is None:
        if args.format is not None or args.catalog:
            raise IllegalArgumentError("--format and --catalog need --output")
        return None
    from kinesis_batch.aws import s3_settings

    return output_of(args).open(app=table, stream=named_stream(args), s3=s3_settings())


def _stream_and_table(parser: argparse.ArgumentParser, table_help: str = "", *, required: bool = True) -> None:
    parser.add_argument("--stream", required=required, help=_help("stream"))
    parser.add_argument("--table", help=table_help or _help("table"))


def _their_stream(parser: argparse.ArgumentParser) -> None:
    """A stream of another account, for the commands that read one (--stream its ARN or name)."""
    parser.add_argument("--role-arn", default="", help=_help("role_arn"))
    parser.add_argument("--external-id", default="", help=_help("external_id"))


def _help(name: str) -> str:
    return str(next(option for option in OPTIONS if option.name == name).metadata["help"])


#: The settings a group's run (--streams-file) takes from each stream's entry, not from a flag.
GROUPED = ("stream", "output")


def _settings(parser: argparse.ArgumentParser, table_help: str = "", optional: tuple[str, ...] = ()) -> None:
    """Every stream setting the command line offers (kinesis_batch.settings), as ``--flag``s with
    no default: a flag not given leaves the setting's own default. ``optional``: required
    settings the command may take from elsewhere (``run``: a group's from its streams file)."""
    groups = {
        "account": parser.add_argument_group("a stream of another account (this account's by default)"),
        "decoding": parser.add_argument_group("decoding (raw bytes by default)"),
        "routing": parser.add_argument_group("routing (one table per kind of record; all to --output by default)"),
        "metrics": parser.add_argument_group("metrics (none by default)"),
    }
    job = parser.add_argument_group("EMR Serverless (the read step as a job run; local Spark by default)")
    job.add_argument("--emr-serverless-application", metavar="ID", help="the Spark application to run the read on")
    job.add_argument("--execution-role", metavar="ARN", help="the IAM role the job run runs as")
    job.add_argument(
        "--environment", metavar="URI", help="the s3://… archive `kinesis-batch package --output s3://…` wrote"
    )
    job.add_argument(
        "--emr-serverless-conf",
        metavar="KEY=VALUE",
        action="append",
        help="a Spark setting of the job run (again for each)",
    )
    job.add_argument(
        "--emr-serverless-timeout-minutes", type=int, metavar="N", help="the job run's timeout: the read's budget"
    )
    for option in offered(CLI):
        where = groups.get(option.metadata["group"], parser)
        help = table_help if option.name == "table" and table_help else option.metadata["help"]
        where.add_argument(
            flag(option),
            type=kind(option),
            required=option.default is MISSING and option.name not in optional,
            choices=option.metadata["choices"] or None,
            help=help,
            action="append" if option.metadata["repeat"] else "store",
        )


def stream_settings(args: argparse.Namespace, **settings: Any) -> StreamSettings:
    """The stream's settings the command's flags give (a repeated flag's values joined), and
    ``settings`` over them."""
    given = {option.name: _joined(option, getattr(args, option.name)) for option in offered(CLI)}
    job_run = _job_run(args)
    try:
        return StreamSettings.from_mapping({**given, "emr_serverless": job_run, **settings})
    except IllegalArgumentError as exc:
        raise IllegalArgumentError(_as_flags(str(exc))) from exc


def _job_run(args: argparse.Namespace) -> ServerlessSettings | None:
    """The emr_serverless setting the EMR Serverless flags give (None: none given)."""
    conf: dict[str, str] = {}
    for pair in args.emr_serverless_conf or []:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise IllegalArgumentError(f"--emr-serverless-conf: {pair!r} is not KEY=VALUE")
        conf[key] = value
    given = {
        "application_id": args.emr_serverless_application,
        "execution_role_arn": args.execution_role,
        "environment": args.environment,
        "conf": conf,
        "timeout_minutes": args.emr_serverless_timeout_minutes,
    }
    if all(value is None or value == {} for value in given.values()):
        return None
    for name, flag_name in list(FLAGS.items())[:3]:
        if not given[name]:
            raise IllegalArgumentError(f"{flag_name} is needed with the other EMR Serverless flags")
    try:
        return ServerlessSettings.of(given)
    except IllegalArgumentError as exc:
        raise IllegalArgumentError(_as_flags(str(exc))) from exc


def _as_flags(message: str) -> str:
    """A settings check's line as the command line names things: the emr_serverless setting's
    fields are flags of their own here (``emr_serverless.conf``: ``--emr-serverless-conf``), and
    the setting as a whole is those flags."""
    for name, flag_name in FLAGS.items():
        message = message.replace(f"emr_serverless.{name}", flag_name)
    return message.replace("emr_serverless", "the EMR Serverless flags")


#: The EMR Serverless flags, by setting (the first three are needed together).
FLAGS = {
    "application_id": "--emr-serverless-application",
    "execution_role_arn": "--execution-role",
    "environment": "--environment",
    "conf": "--emr-serverless-conf",
    "timeout_minutes": "--emr-serverless-timeout-minutes",
}


def _joined(option: Any, value: Any) -> Any:
    return option.metadata["repeat"].join(value) if option.metadata["repeat"] and value is not None else value


def _reading(parser: argparse.ArgumentParser) -> None:
    """How a command that reads runs, beyond the stream's settings."""
    parser.add_argument("--worker-id", help="this worker's id in the lease table (default: host-pid-random)")
    parser.add_argument(
        "--allow-gaps", action="store_true", help="go on when retention trimmed unread records (recorded, not silent)"
    )
    _stop_timeout(
        parser, "at its next safe point: the read cancelled, an unpublished batch discarded, the leases released"
    )


def _stop_timeout(parser: argparse.ArgumentParser, where: str) -> None:
    parser.add_argument(
        "--stop-timeout",
        type=_positive_seconds,
        default=defaults.STOP_TIMEOUT_SECONDS,
        help=f"the first SIGINT (Ctrl-C) or SIGTERM stops cleanly {where}; past this many seconds, or at a "
        f"second signal, it exits at once (default {defaults.STOP_TIMEOUT_SECONDS:g})",
    )


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds in (0, 3600]")
    return seconds


def named_stream(args: argparse.Namespace) -> str:
    """The name of --stream, given as a name or as the ARN of a stream of another account (the
    stream's identity: its lease table's default name, its outputs' paths)."""
    if (args.stream or "").startswith("arn:"):
        return stream_of_arn(args.stream, setting="--stream")
    return validate_stream_name(args.stream)


def stream_table(args: argparse.Namespace) -> str:
    """--table, or the default table of --stream's name (a name or an ARN: :func:`named_stream`)."""
    return _table_of(args, named_stream(args))


def lease_table(args: argparse.Namespace) -> str:
    """--table, or the stream's default table; the stream name is checked first."""
    return _table_of(args, validate_stream_name(args.stream))


def _table_of(args: argparse.Namespace, stream: str) -> str:
    return validate_table_name(args.table if args.table is not None else default_table(stream))
