"""Every table one output stands for, maintained one after another: the output itself, or for a
routed stream's template (``--route-by``) each table its runs made and its dead-letter output."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kinesis_batch.maintenance.maintain import maintain
from kinesis_batch.maintenance.report import MaintenanceReport
from kinesis_batch.openlineage.maintenance import MaintenanceLineage
from kinesis_batch.output.sink import Stored


def maintain_each(tables: Sequence[Stored], *args: Any, **options: Any) -> dict[str, MaintenanceReport]:
    """:func:`maintain` (same arguments) of each of ``tables`` (kinesis_batch.output.Output.tables:
    an output, or each table of a routed template and its dead-letter output), by the table's
    URI, each an OpenLineage run when OpenLineage is configured. A stop asked for ends it
    between two steps of the table under way, as it ends one maintenance."""
    return {table.uri: _maintained(table, *args, **options) for table in tables}


def _maintained(table: Stored, *args: Any, **options: Any) -> MaintenanceReport:
    lineage = MaintenanceLineage.of(table.uri)
    if lineage is None:
        return maintain(table, *args, **options)
    lineage.start()
    try:
        report = maintain(table, *args, **options)
    except BaseException as exc:
        lineage.failed(exc)
        raise
    lineage.complete(report.maintenance_id, report.after.files, report.after.bytes)
    return report


__all__ = ["maintain_each"]
