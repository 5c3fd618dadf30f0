"""``maintain``: compact an output's small files, expire its old versions and remove its orphan
files (kinesis_batch.maintenance), safely beside the runs that publish into it."""

from __future__ import annotations

import argparse
import json

from kinesis_batch.stopping import StopRequest


def maintain_command(args: argparse.Namespace, stop: StopRequest | None = None) -> int:
    from kinesis_batch.aws import s3_settings
    from kinesis_batch.cli.args import output_of
    from kinesis_batch.maintenance import MaintainSettings, maintain_each

    settings = MaintainSettings(args.target_file_mb, args.retain_hours, args.tombstone_hours)
    # Maintenance serves every consumer of the table at once: it names none of them.
    output = output_of(args)
    tables = output.tables(app="", stream="", s3=s3_settings())
    reports = maintain_each(tables, settings, progress=(lambda line: None) if args.json else print, stop=stop)
    if args.json:  # one output: its report; a routed stream's template: each table's, by URI
        done = [report.to_json() for report in reports.values()]
        print(json.dumps(dict(zip(reports, done, strict=True)) if output.routed else done[0], indent=1))
    return 0
