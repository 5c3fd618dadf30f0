"""Every table one output stands for, maintained one after another: the output itself, or for a
routed stream's template (``--route-by``) each table its runs made and its dead-letter output."""

from __future__ import annotations

from typing import Any

from kinesis_batch.maintenance.maintain import maintain
from kinesis_batch.maintenance.report import MaintenanceReport
from kinesis_batch.openlineage.maintenance import MaintenanceLineage
from kinesis_batch.output.routed import RoutedSink
from kinesis_batch.output.sink import Sink


def tables_of(sink: Sink) -> list[Sink]:
    """``sink``, or a routed sink's dead-letter output and every table the stream made, by route."""
    if isinstance(sink, RoutedSink):
        return [sink.home, *(sink.table(route) for route in sorted(sink.known))]
    return [sink]


def maintain_each(sink: Sink, *args: Any, **options: Any) -> dict[str, MaintenanceReport]:
    """:func:`maintain` (same arguments) of each of :func:`tables_of`, by the table's URI, each
    an OpenLineage run when OpenLineage is configured. A stop asked for ends it between two
    steps of the table under way, as it ends one maintenance."""
    return {table.uri: _maintained(table, *args, **options) for table in tables_of(sink)}


def _maintained(table: Sink, *args: Any, **options: Any) -> MaintenanceReport:
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


__all__ = ["maintain_each", "tables_of"]
