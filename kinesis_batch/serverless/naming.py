"""Pure: whose a job run is, in its name and tags. A crashed orchestrator leaves its job run
running; the next run of the same lease table finds it by name (ListJobRuns returns names, not
tags) and cancels it. The tags say the same for people and cost reports.

A group's job run (kinesis_batch.serverless.gathering) reads many batches of many tables: its
name says only that it is a group's (:class:`GroupJobName`), and its members are in a manifest
beside each member's spec (kinesis_batch.serverless.attempt.MEMBERS), where the next run of any
member finds its own batch."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

PREFIX = "kinesis-batch"
#: The tag keys of a job run (cost allocation, the console's filters).
GROUP_PREFIX = f"{PREFIX}-group"
STREAM, TABLE, BATCH, WORKER, GROUP = (f"{PREFIX}:{what}" for what in ("stream", "table", "batch", "worker", "group"))
_NAME = re.compile(rf"{PREFIX}/(?P<table>[A-Za-z0-9_.-]+)/(?P<batch>[^/]+)/(?P<attempt>[0-9a-f]+)")
_GROUP_NAME = re.compile(rf"{GROUP_PREFIX}/(?P<group>[A-Za-z0-9_.-]+)/(?P<id>[0-9a-f]+)")
_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_.-]")
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

    @property
    def client_token(self) -> str:
        """StartJobRun's idempotency token: a start retried by botocore starts one job run."""
        return f"{self.batch_id}-{self.attempt}"[-64:]

    def to_json(self) -> dict[str, str]:
        return {"table": self.table, "batch_id": self.batch_id, "attempt": self.attempt}

    @classmethod
    def from_json(cls, body: dict[str, str]) -> JobName:
        return cls(str(body["table"]), str(body["batch_id"]), str(body["attempt"]))


@dataclass(frozen=True)
class GroupJobName:
    """A group's job run: its group (in the characters a name takes) and an id of its own."""

    group: str
    id: str

    @classmethod
    def new(cls, group: str) -> GroupJobName:
        return cls(_NOT_IN_A_NAME.sub("_", group)[:200], uuid.uuid4().hex[:12])

    def __str__(self) -> str:
        return f"{GROUP_PREFIX}/{self.group}/{self.id}"

    @classmethod
    def parse(cls, name: str) -> GroupJobName | None:
        """The name's parts; None for a job run that is not a group's."""
        match = _GROUP_NAME.fullmatch(name or "")
        return cls(match["group"], match["id"]) if match else None

    @property
    def client_token(self) -> str:
        return f"{self.group}-{self.id}"[-64:]


def tags(name: JobName, *, stream: str, worker_id: str) -> dict[str, str]:
    """A stream's job run's tags (values as AWS allows them: 256 characters of its alphabet)."""
    return _tag_values({STREAM: stream, TABLE: name.table, BATCH: name.batch_id, WORKER: worker_id})


def group_tags(group: str, *, worker_id: str) -> dict[str, str]:
    """A group's job run's tags: its group and worker (its streams are in its manifest, each
    stream's share of its bill in that stream's history)."""
    return _tag_values({GROUP: group, WORKER: worker_id})


def _tag_values(values: dict[str, str]) -> dict[str, str]:
    return {key: _TAG_VALUE.sub("_", value)[:256] for key, value in values.items()}


__all__ = [
    "BATCH", "GROUP", "GROUP_PREFIX", "PREFIX", "STREAM", "TABLE", "WORKER",
    "GroupJobName", "JobName", "group_tags", "tags",
]  # fmt: skip
