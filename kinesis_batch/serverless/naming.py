"""Pure: whose a job run is, in its name and tags. A crashed orchestrator leaves its job run
running; the next run of the same lease table finds it by name (ListJobRuns returns names, not
tags) and cancels it. The tags say the same for people and cost reports."""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "kinesis-batch"
#: The tag keys of a job run (cost allocation, the console's filters).
STREAM, TABLE, BATCH, WORKER, GROUP = (f"{PREFIX}:{what}" for what in ("stream", "table", "batch", "worker", "group"))
_NAME = re.compile(rf"{PREFIX}/(?P<table>[A-Za-z0-9_.-]+)/(?P<batch>[^/]+)/(?P<attempt>[0-9a-f]+)")
_TAG_VALUE = re.compile(r"[^\w .:/=+@-]")


@dataclass(frozen=True)
class JobName:
    """A read step's job run: its lease table, its batch and which attempt of the batch's read."""

    table: str
    batch_id: str
    attempt: str

    def __str__(self) -> str:
        return f"{PREFIX}/{self.table}/{self.batch_id}/{self.attempt}"

    @classmethod
    def parse(cls, name: str) -> JobName | None:
        """The name's parts; None for a job run that is not a kinesis-batch read step."""
        match = _NAME.fullmatch(name or "")
        return cls(match["table"], match["batch"], match["attempt"]) if match else None


def tags(name: JobName, *, stream: str, worker_id: str, group: str = "") -> dict[str, str]:
    """The job run's tags (values as AWS allows them: 256 characters of its alphabet); a group's
    job run (kinesis_batch.serverless.gathering) also names its group."""
    values = {STREAM: stream, TABLE: name.table, BATCH: name.batch_id, WORKER: worker_id}
    if group:
        values[GROUP] = group
    return {key: _TAG_VALUE.sub("_", value)[:256] for key, value in values.items()}


__all__ = ["BATCH", "GROUP", "PREFIX", "STREAM", "TABLE", "WORKER", "JobName", "tags"]
