"""A stream's maintenance in Dagster: the ``_maintain`` job (one op: the output, then a decoding
stream's dead-letter output, kinesis_batch.maintenance) and its daily schedule. It runs beside
the catch-up job without waiting for it: their commits retry each other's. The asset's
``files`` check (kinesis_batch.dagster.checks) says when the files are small again.

No ``from __future__ import annotations``: Dagster reads the op's parameter annotations.
"""

from typing import Any

import dagster as dg

from kinesis_batch import defaults
from kinesis_batch.dagster.resources import AwsClients
from kinesis_batch.dagster.runs import Consumer, failing_for_good
from kinesis_batch.maintenance import maintain_each
from kinesis_batch.stopping import StopRequest, say_on_stderr, stopping_on_signals


def maintenance_defs(
    settings: Consumer, prefix: str, *, cron_schedule: str, tags: dict[str, str]
) -> tuple[dg.JobDefinition, dg.ScheduleDefinition]:
    """The job and its schedule (``cron_schedule``, UTC) for ``settings``' output."""

    @dg.op(name=f"{prefix}_maintain_step", description=f"maintain {settings.output.asset_uri}")
    def maintain_step(context: dg.OpExecutionContext, kinesis_batch_aws: AwsClients) -> dict[str, Any]:
        outputs = [settings.output]
        if settings.decoding.decoding and not settings.output.routed:  # a template's go with its tables
            outputs.append(settings.output.dead_letter(settings.decoding.dead_letter_output))
        reports: dict[str, Any] = {}
        stop = StopRequest()  # Dagster terminates a run with SIGINT: maintenance stops between its steps
        with failing_for_good(), stopping_on_signals(stop, timeout=defaults.STOP_TIMEOUT_SECONDS, say=say_on_stderr):
            for output in outputs:
                tables = output.tables(app=settings.table, stream=settings.stream, s3=kinesis_batch_aws.s3())
                done = maintain_each(tables, settings.maintenance, progress=context.log.info, stop=stop)
                if output.routed:  # each table's, by its URI
                    reports |= {uri: report.to_json() for uri, report in done.items()}
                else:
                    reports[output.asset_uri] = done[tables[0].uri].to_json()
        main = _together(list(reports.values())) if settings.output.routed else reports[settings.output.asset_uri]
        context.add_output_metadata(
            {
                "files_before": main["before"]["files"],
                "files_after": main["after"]["files"],
                "mean_file_bytes_after": main["after"]["mean_file_bytes"],
                "versions_expired": main["versions_expired"],
                "orphans_removed": main["orphans_removed"],
                "seconds": main["seconds"],
                "reports": dg.MetadataValue.json(reports),
            }
        )
        return reports

    @dg.job(name=f"{prefix}_maintain", tags=tags, description=f"Compact, expire, clean {settings.output.asset_uri}")
    def maintain_job() -> None:
        maintain_step()

    schedule = dg.ScheduleDefinition(
        name=f"{prefix}_maintain_daily", cron_schedule=cron_schedule, job=maintain_job, execution_timezone="UTC"
    )
    return maintain_job, schedule


def _together(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """A routed stream's tables' reports as one: their files, versions, orphans and time summed."""
    files = sum(r["after"]["files"] for r in reports)
    mean = sum(r["after"]["mean_file_bytes"] * r["after"]["files"] for r in reports) / files if files else 0
    return {
        "before": {"files": sum(r["before"]["files"] for r in reports)},
        "after": {"files": files, "mean_file_bytes": round(mean)},
        **{key: sum(r[key] for r in reports) for key in ("versions_expired", "orphans_removed", "seconds")},
    }


__all__ = ["maintenance_defs"]
