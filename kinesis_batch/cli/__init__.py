"""``kinesis-batch``: the command line, thin over the library.

Every user error ends with one line on stderr and the exit code :func:`kinesis_batch.errors.classify`
gives it (2 bad input or state, 3 a lost lease, 4 retryable, 1 anything else); never a
traceback. ``run``, ``backfill`` and ``maintain`` stop cleanly on SIGINT and SIGTERM
(kinesis_batch.stopping): one line, exit 130 or 143. One module per group of commands: ``run``
and ``plan`` (run; a group's ``run``: group), ``backfill``, ``status`` and ``history`` (status), ``reset``,
``import-kcl`` and ``export-kcl`` (handover), ``maintain``, ``package``.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from kinesis_batch.cli.args import build_parser
from kinesis_batch.errors import KinesisBatchError, classify
from kinesis_batch.stopping import StopRequest, say_on_stderr, stopping_on_signals

Command = Callable[..., int]
#: The commands that stop cleanly on the first SIGINT or SIGTERM (--stop-timeout): the ones that
#: take leases or change an output. The others are read-only or one conditional write: Python's
#: default handling of a signal leaves nothing behind.
STOPPABLE = ("run", "backfill", "maintain")


#: How a warning reads on stderr: its level, where it comes from, what it says.
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def main(argv: Sequence[str] | None = None, *, spark: Callable[[], Any] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad argument (already said in one line)
        return int(exc.code or 0)
    stop = StopRequest()
    if args.command not in STOPPABLE:
        return exit_code(lambda: _command(args.command)(args, spark, stop), verbose=args.verbose)
    with stopping_on_signals(stop, timeout=args.stop_timeout, say=say_on_stderr):
        return exit_code(lambda: _command(args.command)(args, spark, stop), verbose=args.verbose)


def exit_code(command: Callable[[], int], *, verbose: bool = False) -> int:
    """``command``'s exit code; an error is one line on stderr and its classified exit code. An
    unexpected one (not of our error tree: a bug, or a library's error we do not translate) also
    keeps its traceback: on stderr before the line with ``verbose``, else in a log file the
    line names."""
    try:
        return command()
    except Exception as exc:
        return _fail(error_line(exc, verbose=verbose), classify(exc).exit_code)


def error_line(exc: Exception, *, verbose: bool = False) -> str:
    """An error's one line: ours as it says itself; an unexpected one (e.g. a Spark failure)
    as its type and first line, its traceback on stderr first with ``verbose``, else in a log
    file the line names."""
    if isinstance(exc, KinesisBatchError):
        return str(exc)
    first = str(exc).splitlines()[0] if str(exc) else ""
    told = "".join(traceback.format_exception(exc))
    if verbose:
        print(told, end="", file=sys.stderr)
        where = "traceback above"
    else:
        where = f"traceback in {_kept(told)}; --verbose prints it"
    return f"{type(exc).__name__}: {first} ({where})"


def _kept(told: str) -> str:
    """Write an unexpected error's traceback to a file of its own; its path."""
    folder = os.path.join(tempfile.gettempdir(), "kinesis-batch")
    os.makedirs(folder, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    handle, path = tempfile.mkstemp(prefix=f"error-{stamp}-", suffix=".log", dir=folder)
    with os.fdopen(handle, "w") as file:
        file.write(told)
    return path


def _fail(message: str, code: int) -> int:
    print(f"kinesis-batch: error: {message}", file=sys.stderr)
    return code


def _command(name: str) -> Command:
    """The command's function, called with (args, spark, stop); spark is used by those that read,
    ``stop`` by those that stop cleanly on SIGINT and SIGTERM (STOPPABLE)."""
    from kinesis_batch.cli import backfill, group, handover, iam_policy, maintain, package, run, status

    commands: dict[str, Command] = {
        "run": lambda args, *rest: (group.group_command if args.streams_file or args.group else run.run_command)(
            args, *rest
        ),
        "backfill": backfill.backfill_command,
        "plan": lambda args, *_: run.plan_command(args),
        "status": lambda args, *_: status.status_command(args),
        "history": lambda args, *_: status.history_command(args),
        "reset": lambda args, *_: handover.reset_command(args),
        "import-kcl": lambda args, *_: handover.handover_command(args),
        "export-kcl": lambda args, *_: handover.handover_command(args),
        "maintain": lambda args, _, stop: maintain.maintain_command(args, stop),
        "package": lambda args, *_: package.package_command(args),
        "iam-policy": lambda args, *_: iam_policy.iam_policy_command(args),
    }
    return commands[name]


__all__ = ["build_parser", "error_line", "exit_code", "main"]
