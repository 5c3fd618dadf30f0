"""What a Dagster run of a stream says of itself: the metadata of a catch-up's materialization
and of a backfill's output.

No ``from __future__ import annotations``, as in the rest of the adapter.
"""

from typing import Any

import dagster as dg
import pyarrow as pa

from kinesis_batch.output import Output
from kinesis_batch.run import RunReport


def materialization(report: RunReport, output: Output, fields: pa.Schema | None = None) -> dict[str, Any]:
    """A run's metadata: rows (and, decoding, dead letters; a table of current state, what its
    changes did), batch, where it went, a row per shard read, the timings, and a decoded
    table's ``fields`` (``dagster/column_schema``)."""
    landing = report.landing
    columns = [
        dg.TableColumn("shard_id", "string"),
        dg.TableColumn("records", "int"),
        *([dg.TableColumn("dead_letters", "int")] if landing else []),
        dg.TableColumn("from_checkpoint", "string"),
        dg.TableColumn("to_checkpoint", "string"),
        dg.TableColumn("shard_end", "bool"),
    ]
    rows = [
        dg.TableRecord(
            {
                "shard_id": shard.shard_id,
                "records": shard.records,
                **({"dead_letters": shard.landing.dead_letters if shard.landing else 0} if landing else {}),
                "from_checkpoint": str(shard.start),
                "to_checkpoint": str(shard.end),
                "shard_end": shard.reached_shard_end,
            }
        )
        for shard in report.shards
    ]
    landed: dict[str, Any] = {}
    if landing is not None:
        landed = {
            "rows": landing.rows,
            "dead_letters": landing.dead_letters,
            "filtered": landing.filtered,
            "dead_letter_reasons": dg.MetadataValue.json(dict(landing.reasons)),
            **({"changes": dg.MetadataValue.json(dict(landing.changes))} if landing.changes else {}),
            **({"rows_by_table": dg.MetadataValue.json(dict(landing.tables))} if landing.tables else {}),
            **(
                {"changes_by_table": dg.MetadataValue.json({r: dict(c) for r, c in landing.table_changes.items()})}
                if landing.table_changes
                else {}
            ),
        }
    if fields is not None and len(fields):
        schema = dg.TableSchema(columns=[dg.TableColumn(field.name, str(field.type)) for field in fields])
        landed["dagster/column_schema"] = dg.MetadataValue.table_schema(schema)
    job = report.job_run
    if job is not None:  # the read's EMR Serverless job run: which, and what it was billed
        landed |= {
            "emr_serverless_job_run": job.job_run_id,
            "emr_serverless_application": job.application_id,
            "billed_vcpu_hours": job.vcpu_hours,
            "billed_memory_gb_hours": job.memory_gb_hours,
            "billed_storage_gb_hours": job.storage_gb_hours,
            **({"spark_ui": dg.MetadataValue.url(job.dashboard)} if job.dashboard else {}),
        }
    return {
        "dagster/row_count": landing.rows if landing else report.records,
        "records": report.records,
        **landed,
        "batch_id": report.batch_id,
        "published": report.published,
        "output": dg.MetadataValue.path(report.output or output.asset_uri),
        "shards": dg.MetadataValue.table(rows, schema=dg.TableSchema(columns=columns)),
        "timings": dg.MetadataValue.json(report.timings),
        "recovered": dg.MetadataValue.json(report.recovered),
        "leased_elsewhere": dg.MetadataValue.json(report.leased_elsewhere),
    }


__all__ = ["materialization"]
