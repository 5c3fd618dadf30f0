"""A maintenance's OpenLineage run (``maintain``, the maintenance DAG, Dagster's job): one run
per table, the table its input and its output, START then COMPLETE (with the table's files and
bytes after it, and the maintenance id) or FAIL, when OpenLineage is configured; never an error.
The job is ``maintain:<the table's name>``."""

from __future__ import annotations

import uuid
from typing import Any

from kinesis_batch.lineage.emit import Sender, warn
from kinesis_batch.lineage.naming import output_dataset


class MaintenanceLineage:
    def __init__(self, sender: Sender, table: tuple[str, str]) -> None:
        self.sender, self.table, self.run = sender, table, str(uuid.uuid4())

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

    def start(self) -> None:
        from openlineage.client.event_v2 import RunState

        self.sender.send(lambda: self._event(RunState.START))

    def complete(self, maintenance_id: str, files: int, size: int) -> None:
        from openlineage.client.event_v2 import RunState

        from kinesis_batch.lineage.events import MaintenanceFacet, Written

        written = [Written(*self.table, rows=None, files=files, size=size)]
        facets = {"kinesisBatch": MaintenanceFacet(maintenanceId=maintenance_id)}
        self.sender.send(lambda: self._event(RunState.COMPLETE, written, facets))

    def failed(self, error: BaseException) -> None:
        from openlineage.client.event_v2 import RunState

        from kinesis_batch.lineage.events import error_facet

        line = str(error).splitlines()[0] if str(error) else type(error).__name__
        self.sender.send(lambda: self._event(RunState.FAIL, facets={"errorMessage": error_facet(line)}))

    def _event(self, state: Any, written: list[Any] | None = None, facets: dict[str, Any] | None = None) -> Any:
        from kinesis_batch.lineage.events import event

        job = f"maintain:{self.table[1]}"
        return event(state, job=job, run=self.run, inputs=[self.table], written=written or (), facets=facets)


__all__ = ["MaintenanceLineage"]
