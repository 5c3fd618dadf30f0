"""``run --streams-file F --group G``: every stream of a group in one run (kinesis_batch.run.group),
each with its own entry's settings; one line per stream, the exit code the worst of them.

The command line gives what is the group's, not a stream's: where Spark runs (--spark-master,
--spark-remote), the bound (--until), the worker id, --allow-gaps, the stop's timeout. A stream
setting's flag beside --streams-file is refused (it would say which stream it is for), and so
is an entry of the group that names its own Spark: the group's streams share one.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kinesis_batch.cli.args import FLAGS
from kinesis_batch.cli.run import catch_up_run, until_of
from kinesis_batch.config import KEEP, RunConfig
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.options import flag
from kinesis_batch.run.group import GroupReport, SharedEngines, StreamRun, in_a_group, local_share, run_group
from kinesis_batch.serverless.gathering import JobRunGathering
from kinesis_batch.settings import CLI, StreamSettings, as_field_message, offered
from kinesis_batch.stopping import StopRequest
from kinesis_batch.streams_file import ENTRY_FIELDS, StreamsFile, entry_settings, stream_name

#: The stream settings a group's run takes from its command line, for every stream alike.
GROUP_WIDE = ("spark_master", "spark_remote")


def group_command(
    args: argparse.Namespace, spark: Callable[[], Any] | None = None, stop: StopRequest | None = None
) -> int:
    """``run`` with --streams-file and --group: run the group; print each stream's lines (its
    errors on stderr, as the command line's one line each), then the group's; the worst exit code."""
    from kinesis_batch.cli import error_line

    stop = stop or StopRequest()
    until = until_of(args)
    _refuse_stream_flags(args)
    if not args.streams_file or not args.group:
        raise IllegalArgumentError("run: --streams-file and --group go together (the group's streams and settings)")
    streams = StreamsFile.read(Path(args.streams_file))
    group = streams.group(args.group)
    runs, gathering = _stream_runs(args, streams, group.name, group.streams, until, spark, stop)
    report = run_group(group.name, runs, at_once=args.streams_at_once, stop=stop, gathering=gathering)
    said = {id(o.error): error_line(o.error, verbose=args.verbose) for o in report.outcomes if o.error is not None}
    if args.json:
        print(json.dumps(report.to_json(lambda exc: said[id(exc)]), indent=1))
    else:
        _print_lines(report, said)
    return report.exit_code


def _print_lines(report: GroupReport, said: dict[int, str]) -> None:
    for outcome in report.outcomes:
        if outcome.report is not None:
            print("\n".join(f"{outcome.stream}: {line}" for line in outcome.report.lines("run")))
    for outcome in report.failed:
        print(f"kinesis-batch: error: {outcome.stream}: {said[id(outcome.error)]}", file=sys.stderr)
    print(report.summary())


def _refuse_stream_flags(args: argparse.Namespace) -> None:
    for option in offered(CLI):
        if option.name not in GROUP_WIDE and getattr(args, option.name) is not None:
            raise IllegalArgumentError(
                f"{flag(option)}: a group's streams take their settings from their entries in the streams file"
            )
    alone = [*FLAGS.values(), "--move-output", "--run-id"]  # argparse's attribute is the flag's name
    given = [name for name in alone if getattr(args, name.removeprefix("--").replace("-", "_")) not in (None, False)]
    if given:
        raise IllegalArgumentError(f"{given[0]}: a stream's alone, not a group's (run that stream with --stream)")


def _stream_runs(
    args: argparse.Namespace,
    streams: StreamsFile,
    group: str,
    members: tuple[str, ...],
    until: Any,
    spark: Callable[[], Any] | None,
    stop: StopRequest,
) -> tuple[dict[str, StreamRun], JobRunGathering]:
    """Each member's run, in the group's order: one that cannot be made (no entry, a broken one,
    its own Spark) raises its line when its turn comes, so it fails alone; and the gathering of
    the members whose reads are job runs."""
    from kinesis_batch.aws import dynamodb_client, kinesis_client

    made, broken = streams.entries(entry_settings, ENTRY_FIELDS, key=_stream, only=members)
    by_stream = {settings.stream: settings for settings in made}
    lines = {stream_name(entry.stream): entry.describe(streams.path) for entry in broken}
    clients = kinesis_client(), dynamodb_client()  # thread-safe: one of each for the group
    engines = SharedEngines()
    job_runs = [stream for stream, settings in by_stream.items() if settings.emr_serverless is not None]
    gathering = JobRunGathering(group, job_runs, per_job_run=args.streams_per_job_run, progress=_said)
    share = local_share(args.streams_at_once, members, gathering)

    def run_of(stream: str) -> StreamRun:
        settings = by_stream.get(stream)
        if settings is None:
            line = lines.get(stream) or f"{streams.path}: group {args.group!r}: {stream!r} has no [[streams]] entry"
            return _raising(IllegalArgumentError(line))
        try:
            in_a_group(settings)
            config = _config(args, settings, until, share)
        except IllegalArgumentError as exc:
            return _raising(IllegalArgumentError(f"{streams.path}: {stream}: {as_field_message(str(exc))}"))
        run = functools.partial(
            catch_up_run,
            args,
            config,
            None,
            spark,
            stop,
            clients=clients,
            engines=engines.of,
            gathering=gathering,
            label=stream,
        )
        return lambda: run().run()

    return {stream: run_of(stream) for stream in members}, gathering


def _said(line: str) -> None:
    """A group's own progress (its job runs' split), on stderr with --json too."""
    print(line, file=sys.stderr, flush=True)


def _stream(settings: StreamSettings) -> str:
    return settings.stream


def _config(args: argparse.Namespace, settings: StreamSettings, until: Any, share: int) -> RunConfig:
    spark = {name: getattr(args, name) for name in GROUP_WIDE if getattr(args, name) is not None}
    run: dict[str, Any] = {"worker_id": args.worker_id} if args.worker_id is not None else {}
    return RunConfig(
        dataclasses.replace(settings, **spark),
        allow_gaps=args.allow_gaps,
        until=until,
        output_binding=KEEP,
        slot_share=share,
        **run,
    )


def _raising(error: Exception) -> StreamRun:
    def run() -> Any:
        raise error

    return run


__all__ = ["group_command"]
