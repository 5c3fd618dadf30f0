"""The fleet at a glance: every stream of a streams file, its group, and what its status says
(kinesis_batch.status.values), one line each, worst first. :func:`read_fleet` judges and sorts
what a reader it is given returns (pure but for running the reads side by side);
:func:`fleet_of_file` reads a streams file's streams with clients, for the command line's
``status --streams-file`` and the Airflow page alike. A stream's error is its line.

The worst first: a stream whose status cannot be read (its entry is broken, its output holds
another format's table, it was deleted, its role cannot be assumed) first, then by retention
risk (lost, critical, at risk), then with a batch pending (a run failed or is under way), then
by lag. A stream that never ran has no lease table yet: it is "not run yet", not an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinesis_batch import defaults
from kinesis_batch.aws import S3Settings
from kinesis_batch.errors import IllegalArgumentError, LeaseTableNotFoundError
from kinesis_batch.shards.lag import RetentionRisk
from kinesis_batch.status.values import StreamStatus
from kinesis_batch.streams_file import ENTRY_FIELDS, StreamsFile, entry_settings, stream_name

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient

NOT_RUN = "not run yet"
#: Streams whose status is read side by side: each is a few control-plane calls and a lag probe a shard.
READS_AT_ONCE = 8
RUNNING, PENDING, COMMITTED = "running", "pending", "committed"


@dataclass(frozen=True)
class FleetLine:
    """One stream of the fleet: its status in a few figures, or the error that kept it from
    being read (``error``; the figures are then empty)."""

    stream: str
    group: str = ""  # "" when in none
    error: str = ""
    # Where the stream's page is: its lease table and output as its entry names them.
    table: str = ""
    output: str = ""
    format: str = ""
    catalog: str = ""
    lag_seconds: float = 0.0
    retention_risk: RetentionRisk = RetentionRisk.OK
    outcome: str = NOT_RUN  # NOT_RUN, RUNNING (a lease held now), PENDING (a batch pending, none held), COMMITTED
    last_run: str | None = None  # the output's last committed batch's run
    committed_at: datetime | None = None
    records: int = 0  # that batch's
    dead_letters: int = 0  # that batch's
    pending_batches: tuple[str, ...] = ()

    def rank(self) -> tuple[int, int, int, float]:
        """Lower is worse: sorts the fleet worst first."""
        risks = list(RetentionRisk)
        return (
            0 if self.error else 1,
            -risks.index(self.retention_risk),
            0 if self.pending_batches else 1,
            -self.lag_seconds,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "group": self.group or None,
            "error": self.error or None,
            "table": self.table or None,
            "output": self.output or None,
            "format": self.format or None,
            "catalog": self.catalog or None,
            "lag_seconds": self.lag_seconds,
            "retention_risk": self.retention_risk.value,
            "outcome": self.outcome,
            "last_run": self.last_run,
            "committed_at": self.committed_at.isoformat() if self.committed_at else None,
            "records": self.records,
            "dead_letters": self.dead_letters,
            "pending_batches": list(self.pending_batches),
        }


def fleet_line(stream: str, group: str, status: StreamStatus) -> FleetLine:
    """What a stream's status says of it, in the fleet's figures."""
    summary = status.summary()
    output = status.output
    if summary["leased"]:
        outcome = RUNNING
    elif summary["pending_batches"]:
        outcome = PENDING
    elif output is not None and output.last_batch is not None:
        outcome = COMMITTED
    else:
        outcome = NOT_RUN
    return FleetLine(
        stream=stream,
        group=group,
        lag_seconds=status.max_lag_seconds,
        retention_risk=status.worst_retention_risk,
        outcome=outcome,
        last_run=output.last_run if output else None,
        committed_at=output.committed_at if output else None,
        records=output.records if output else 0,
        dead_letters=output.landing.dead_letters if output and output.landing else 0,
        pending_batches=tuple(summary["pending_batches"]),
    )


def read_fleet(
    streams: Iterable[str],
    groups: Mapping[str, str],
    read: Callable[[str], StreamStatus],
    *,
    broken: Mapping[str, str] | None = None,
    at_once: int = READS_AT_ONCE,
) -> list[FleetLine]:
    """Every stream's line (``groups``: stream -> its group; ``read``: its status, asked of
    ``at_once`` streams side by side; ``broken``: stream -> why its entry cannot be read), worst
    first. A stream's error is its line alone."""

    def line(stream: str) -> FleetLine:
        group = groups.get(stream, "")
        try:
            return fleet_line(stream, group, read(stream))
        except LeaseTableNotFoundError:  # its first run makes the table
            return FleetLine(stream, group)
        except Exception as exc:  # one stream's failure to read is its line, never the fleet's
            return FleetLine(stream, group, error=str(exc))

    with ThreadPoolExecutor(max_workers=at_once) as pool:
        lines = list(pool.map(line, streams))
    lines += [FleetLine(stream, groups.get(stream, ""), error=why) for stream, why in (broken or {}).items()]
    return sorted(lines, key=FleetLine.rank)


def fleet_of_file(
    path: Path,
    kinesis: KinesisClient,
    dynamodb: DynamoDBClient,
    *,
    s3: S3Settings | None = None,
    small_file_mb: float = defaults.SMALL_FILE_MB,
    sts_endpoint_url: str | None = None,
) -> list[FleetLine]:
    """Every stream of the streams file at ``path`` (kinesis_batch.streams_file), its group, and
    its status read with these clients (a stream's role, when its entry names one, for its
    Kinesis calls, assumed at ``sts_endpoint_url``, default the environment's STS), worst first:
    the command line's ``status --streams-file`` and the Airflow page's fleet. An entry that does
    not read, or a group's stream without one, is an error line."""
    from kinesis_batch.aws import assumed_role
    from kinesis_batch.status.read import stream_status

    streams = StreamsFile.read(path)
    entries, broken = streams.entries(entry_settings, ENTRY_FIELDS, key=lambda settings: settings.stream)
    groups = _groups(streams)
    by_stream = {settings.stream: settings for settings in entries}
    unread = {stream_name(entry.stream) or f"entry {entry.number}": entry.describe(path) for entry in broken}
    for stream, group in groups.items():
        if stream not in by_stream and stream not in unread:
            unread[stream] = f"{path}: group {group!r}: {stream!r} has no [[streams]] entry"

    def read(stream: str) -> StreamStatus:
        settings = by_stream[stream]
        # refused: one line, as the run's start says it
        theirs = (
            assumed_role(kinesis, settings.role_arn, settings.external_id, sts_endpoint_url=sts_endpoint_url)
            if settings.role_arn
            else kinesis
        )
        output = settings.destination.open(app=settings.lease_table, stream=stream, s3=s3)
        output.check_place()  # another format's table there is the stream's failure, run or not
        return stream_status(
            theirs, dynamodb, settings.stream_id, settings.lease_table, output=output, small_file_mb=small_file_mb
        )

    def placed(line: FleetLine) -> FleetLine:
        settings = by_stream.get(line.stream)
        if settings is None:
            return line
        return replace(
            line, table=settings.lease_table, output=settings.output, format=settings.format, catalog=settings.catalog
        )

    return [placed(line) for line in read_fleet(by_stream, groups, read, broken=unread)]


def _groups(streams: StreamsFile) -> dict[str, str]:
    """Stream -> its group, over the groups that read (a broken group is its run's line)."""
    member: dict[str, str] = {}
    for table in streams.group_tables:
        try:
            group = streams.group(str(table.get("name")))
        except IllegalArgumentError:
            continue
        member.update(dict.fromkeys(group.streams, group.name))
    return member


__all__ = ["COMMITTED", "NOT_RUN", "PENDING", "RUNNING", "FleetLine", "fleet_line", "fleet_of_file", "read_fleet"]
