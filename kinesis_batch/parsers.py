"""The forms users write a stream's settings in: names, times, start positions, sizes. Each
parser raises IllegalArgumentError with a message that names the setting (as its ``--option``)
and shows an accepted form, so every adapter can print it as its one line."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import urlsplit

from kinesis_batch import defaults
from kinesis_batch.bounds import NOT_NEGATIVE, TARGET_FILE_MB
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.shards.checkpoint import Checkpoint

_STREAM_NAME = re.compile(r"^[a-zA-Z0-9_.-]{1,128}$")
_STREAM_ARN = re.compile(r"^arn:aws[a-z-]*:kinesis:[a-z0-9-]+:\d{12}:stream/([a-zA-Z0-9_.-]{1,128})$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_TABLE_NAME = re.compile(r"^[a-zA-Z0-9_.-]{3,255}$")
_RUN_ID = re.compile(r"^[a-zA-Z0-9_-][a-zA-Z0-9_.-]{0,127}$")  # a folder name: batch_id=<run id>


def default_table(stream: str) -> str:
    return defaults.lease_table(stream)


def validate_stream_name(stream: str) -> str:
    if not _STREAM_NAME.match(stream or ""):
        raise IllegalArgumentError(f"--stream: {stream!r} is not a Kinesis stream name (1-128 of a-z A-Z 0-9 _ . -)")
    return stream


def stream_of_arn(arn: str, *, setting: str = "--stream-arn") -> str:
    """The stream's name in a Kinesis stream ARN (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME)."""
    matched = _STREAM_ARN.match(arn or "")
    if not matched:
        raise IllegalArgumentError(
            f"{setting}: {arn!r} is not a Kinesis stream ARN (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME)"
        )
    return matched.group(1)


def validate_role_arn(arn: str) -> str:
    if not _ROLE_ARN.match(arn or ""):
        raise IllegalArgumentError(f"--role-arn: {arn!r} is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)")
    return arn


def validate_table_name(table: str) -> str:
    if not _TABLE_NAME.match(table or ""):
        raise IllegalArgumentError(f"--table: {table!r} is not a DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -)")
    return table


def validate_run_id(run_id: str, *, setting: str = "--run-id") -> str:
    if not _RUN_ID.match(run_id or ""):
        raise IllegalArgumentError(
            f"{setting}: {run_id!r} is not a run id (1-128 of a-z A-Z 0-9 _ . -, not starting with a dot)"
        )
    return run_id


def parse_time(text: str, *, setting: str = "time") -> datetime:
    """An ISO 8601 time; without a zone it is taken as UTC. Returned in UTC."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise IllegalArgumentError(f"{setting}: {text!r} is not an ISO 8601 time (e.g. 2026-11-22T03:00:00Z)") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_initial_position(text: str) -> Checkpoint:
    """``trim_horizon``, ``latest`` or ``at_timestamp=ISO8601`` (case-insensitive)."""
    kind, _, argument = text.strip().partition("=")
    kind = kind.lower()
    if kind == "trim_horizon" and not argument:
        return Checkpoint.trim_horizon()
    if kind == "latest" and not argument:
        return Checkpoint.latest()
    if kind == "at_timestamp" and argument:
        return Checkpoint.at_timestamp(parse_time(argument, setting="--initial-position at_timestamp"))
    raise IllegalArgumentError(f"--initial-position: {text!r} is not one of trim_horizon, latest, at_timestamp=ISO8601")


#: Spark Connect's port when a URL names none.
DEFAULT_CONNECT_PORT = 15002


def parse_connect_url(url: str, *, setting: str = "--spark-remote") -> tuple[str, int]:
    """A Spark Connect URL, ``sc://HOST[:PORT][/;PARAMS]``, as (host, port)."""
    if not url.startswith("sc://"):
        raise IllegalArgumentError(f"{setting}: {url!r} is not a Spark Connect URL (sc://HOST:PORT)")
    parts = urlsplit("//" + re.split(r"[/;]", url.removeprefix("sc://"), maxsplit=1)[0])
    try:
        port = parts.port
    except ValueError:
        raise IllegalArgumentError(f"{setting}: {url!r}: its port is not a number from 0 to 65535") from None
    if not parts.hostname:
        raise IllegalArgumentError(f"{setting}: {url!r} names no host (sc://HOST:PORT)")
    return parts.hostname, DEFAULT_CONNECT_PORT if port is None else port


def validate_target_file_mb(target: int) -> int:
    """``--target-file-mb``: the size the runs' files roll at and maintenance compacts to."""
    if isinstance(target, bool) or not isinstance(target, int):
        raise IllegalArgumentError(f"--target-file-mb: {target!r} is not a whole number")
    TARGET_FILE_MB.check("--target-file-mb", target)
    return target


def validate_small_file_mb(mean_mb: float, *, setting: str = "--small-file-mb") -> float:
    """The mean file size (MiB) the files check warns below: 0 (never) or more."""
    NOT_NEGATIVE.check(setting, mean_mb)
    return mean_mb
