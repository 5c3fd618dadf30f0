"""``status --streams-file F``: every stream of a streams file and its group, one line each,
worst first (kinesis_batch.status.fleet); ``--json``: a list of them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kinesis_batch.alerts import duration
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.status.fleet import FleetLine, read_fleet
from kinesis_batch.status.values import StreamStatus
from kinesis_batch.streams_file import ENTRY_FIELDS, StreamsFile, entry_settings, stream_name


def fleet_command(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import as_role, dynamodb_client, kinesis_client, s3_settings
    from kinesis_batch.status import stream_status

    if args.stream is not None or args.table is not None or args.output is not None:
        raise IllegalArgumentError("status: --streams-file reads each stream's settings from its entry: no --stream")
    path = Path(args.streams_file)
    streams = StreamsFile.read(path)
    entries, broken = streams.entries(entry_settings, ENTRY_FIELDS, key=lambda settings: settings.stream)
    groups = _groups(streams)
    by_stream = {settings.stream: settings for settings in entries}
    kinesis, dynamodb, s3 = kinesis_client(), dynamodb_client(), s3_settings()

    def read(stream: str) -> StreamStatus:
        settings = by_stream[stream]
        theirs = as_role(kinesis, settings.role_arn, settings.external_id) if settings.role_arn else kinesis
        output = settings.destination.open(app=settings.lease_table, stream=stream, s3=s3)
        output.check_place()  # another format's table there is the stream's failure, run or not
        return stream_status(
            theirs, dynamodb, settings.stream_id, settings.lease_table, output=output, small_file_mb=args.small_file_mb
        )

    broken_lines = {stream_name(entry.stream) or f"entry {entry.number}": entry.describe(path) for entry in broken}
    for stream, group in groups.items():  # a group's stream the file has no entry for
        if stream not in by_stream and stream not in broken_lines:
            broken_lines[stream] = f"{path}: group {group!r}: {stream!r} has no [[streams]] entry"
    lines = read_fleet(by_stream, groups, read, broken=broken_lines)
    if args.json:
        print(json.dumps([line.to_json() for line in lines], indent=1))
        return 0
    _print(path, lines)
    return 0


def _groups(streams: StreamsFile) -> dict[str, str]:
    """Stream -> its group, over the groups that read (a broken group is the run's line)."""
    member: dict[str, str] = {}
    for table in streams.group_tables:
        try:
            group = streams.group(str(table.get("name")))
        except IllegalArgumentError:
            continue
        member.update(dict.fromkeys(group.streams, group.name))
    return member


def _print(path: Path, lines: list[FleetLine]) -> None:
    failing = sum(1 for line in lines if line.error)
    print(f"{len(lines)} streams of {path}, worst first: {failing} that cannot be read")
    print(
        f"{'stream':<32} {'group':<12} {'lag':>6} {'risk':<8} {'last run':<28} {'outcome':<11} {'records':>8} "
        "dead pending"
    )
    for line in lines:
        if line.error:
            print(f"{line.stream:<32} {line.group or '-':<12} error: {line.error}")
            continue
        print(
            f"{line.stream:<32} {line.group or '-':<12} {duration(line.lag_seconds):>6} {line.retention_risk.value:<8} "
            f"{line.last_run or '-':<28} {line.outcome:<11} {line.records:>8} {line.dead_letters:>4} "
            f"{', '.join(line.pending_batches) or '-'}"
        )


__all__ = ["fleet_command"]
