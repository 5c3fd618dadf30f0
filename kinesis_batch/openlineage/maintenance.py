"""A maintenance's OpenLineage run (``maintain``, the maintenance DAG, Dagster's job): one run
per table, the table its input and its output, START then COMPLETE (with the table's files and
bytes after it, and the maintenance id) or FAIL, when OpenLineage is configured; never an error.
The job is ``maintain:<the table's name>``."""

from __future__ import annotations

import uuid

from kinesis_batch.openlineage.emit import Lineage, Sender, warn
from kinesis_batch.openlineage.naming import MAINTENANCE_JOB, output_dataset


class MaintenanceLineage(Lineage):
    """``table``: the maintained table's (namespace, name), its input and its output."""

    job_type = MAINTENANCE_JOB

    def __init__(self, sender: Sender, table: tuple[str, str]) -> None:
        super().__init__(sender, f"maintain:{table[1]}", str(uuid.uuid4()), [table])

    @classmethod
    def of(cls, uri: str) -> MaintenanceLineage | None:
        """``uri``: the maintained table's (a sink's ``uri``); None unless OpenLineage is configured."""
        sender = Sender.make()
        if sender is None:
            return None
        try:
            return cls(sender, output_dataset(uri))
        except Exception as exc:  # an output OpenLineage cannot name
            warn(exc)
            return None

    def complete(self, maintenance_id: str, files: int, size: int) -> None:
        from openlineage.client.event_v2 import RunState

        from kinesis_batch.openlineage.events import MaintenanceFacet, Written

        table = self.inputs[0]
        facets = {"kinesisBatch": MaintenanceFacet(maintenanceId=maintenance_id)}
        self._send(RunState.COMPLETE, lambda: [Written(*table, rows=None, files=files, size=size)], facets)


__all__ = ["MaintenanceLineage"]
