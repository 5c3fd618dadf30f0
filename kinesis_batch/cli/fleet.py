"""``status --streams-file F``: every stream of a streams file and its group, one line each,
worst first (kinesis_batch.status.fleet); ``--json``: a list of them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kinesis_batch.alerts import duration
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.status.fleet import FleetLine, fleet_of_file


def fleet_command(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import dynamodb_client, kinesis_client, s3_settings

    if args.stream is not None or args.table is not None or args.output is not None or args.role_arn:
        raise IllegalArgumentError(
            "status: --streams-file reads each stream's settings from its entry (its role too): no --stream"
        )
    path = Path(args.streams_file)
    lines = fleet_of_file(path, kinesis_client(), dynamodb_client(), s3=s3_settings(), small_file_mb=args.small_file_mb)
    if args.json:
        print(json.dumps([line.to_json() for line in lines], indent=1))
        return 0
    _print(path, lines)
    return 0


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
