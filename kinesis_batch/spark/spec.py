"""What crosses between the driver and a Spark task, both ways: a task's work as JSON, and a
task's error as one marker line in Spark's failure text that the driver turns back into the
library's own typed error (so a user never sees Spark's wrapper).

The driver passes Kinesis' endpoint and region in the spec, and the way its pages are parsed
(``KINESIS_BATCH_READER``): Python workers do not see environment changes made in the driver
after the JVM started, nor, on a cluster, the driver's environment at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kinesis_batch import errors
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import InvalidStateError, KinesisBatchError
from kinesis_batch.shards import page
from kinesis_batch.storage.layout import FileLayout
from kinesis_batch.storage.place import Place

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient

    from kinesis_batch.decoding.spec import DecodeSpec
    from kinesis_batch.planning import ShardRange
    from kinesis_batch.spark.targets import RouteTargets

ERROR_MARKER = "kinesis-batch-task-error:"  # a line of a failed task's message: the typed error as JSON
#: A task whose Python worker could not import what the task needs (unpickling its function).
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


@dataclass(frozen=True)
class RangeSpec:
    """One shard range of a group, as JSON-able values."""

    shard_id: str
    closed: bool
    depth: int
    start: dict[str, Any]  # a checkpoint as CommitRecord JSON has it
    parents: tuple[str, ...] = ()  # planned parents: read only once these reached SHARD_END


@dataclass(frozen=True)
class GroupSpec:
    """One task's work, as JSON-able values."""

    stream: str
    ranges: tuple[RangeSpec, ...]  # parents before children
    until: str | None
    targets: dict[str, Any]  # where each route's files go: kinesis_batch.spark.targets.RouteTargets as JSON
    batch_id: str
    batch_column: bool  # batch_id written as a column (the table formats; parquet has it from its folder)
    endpoint_url: str | None
    region: str | None
    limits: dict[str, Any]
    dead_data: dict[str, Any] | None = None  # the dead-letter output's data place (decoding only)
    decode: dict[str, Any] | None = None  # kinesis_batch.decoding.spec.DecodeSpec as JSON; None: raw rows
    dead_files: dict[str, Any] | None = None  # the dead-letter output's FileLayout as JSON
    reader: str = page.DEFAULT_READER  # how GetRecords pages are parsed (shards.page): the driver's choice
    role_arn: str = ""  # the stream's account's role the task reads with (its own credentials assume it)
    external_id: str = ""
    sts_endpoint_url: str | None = None  # where the task assumes the role: the driver's STS endpoint

    @classmethod
    def of(
        cls,
        config: RunConfig,
        kinesis: KinesisClient,
        ranges: Sequence[ShardRange],
        until: datetime | None,
        targets: RouteTargets,
        batch_id: str,
        *,
        batch_column: bool = True,
        dead_data: Place | None = None,
        decode: DecodeSpec | None = None,
        dead_files: FileLayout | None = None,
        sts_endpoint_url: str | None = None,
    ) -> GroupSpec:
        return cls(
            stream=config.stream_id,
            ranges=tuple(
                RangeSpec(r.shard_id, r.closed, r.depth, r.start.to_json(), tuple(r.planned_parents)) for r in ranges
            ),
            until=until.isoformat() if until else None,
            targets=targets.to_json(),
            batch_id=batch_id,
            batch_column=batch_column,
            endpoint_url=kinesis.meta.endpoint_url,
            region=kinesis.meta.region_name,
            limits=asdict(config.read_limits),
            dead_data=dead_data.to_json() if dead_data else None,
            decode=decode.to_json() if decode else None,
            dead_files=dead_files.to_json() if dead_files else None,
            reader=page.chosen(),
            role_arn=config.settings.role_arn,
            external_id=config.settings.external_id,
            sts_endpoint_url=sts_endpoint_url,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> GroupSpec:
        body = json.loads(text)
        ranges = tuple(RangeSpec(**{**r, "parents": tuple(r["parents"])}) for r in body.pop("ranges"))
        return cls(ranges=ranges, **body)


def task_error(exc: Exception) -> str:
    """The marker line a task's failure carries: the error's class name and message, one line
    of JSON."""
    return ERROR_MARKER + json.dumps({"type": type(exc).__name__, "message": str(exc)})


def raised_in_task(exc: BaseException) -> KinesisBatchError | None:
    """The error a task raised, rebuilt from the marker line in Spark's failure text (same
    class, same message); or, when the executors' Python could not import a module the task
    needs (before any code of ours ran), an InvalidStateError naming it; None when the failure
    did not come from a task."""
    text = str(exc)
    at = text.find(ERROR_MARKER)
    if at < 0:
        missing = _MISSING_MODULE.search(text)
        if missing is None:
            return None
        return InvalidStateError(
            f"the executors cannot import {missing.group(1)}: they need kinesis-batch and its dependencies "
            "(kinesis-batch package writes them as one archive; docs/platforms.md)"
        )
    try:
        body, _ = json.JSONDecoder().raw_decode(text, at + len(ERROR_MARKER))
    except ValueError:
        return None
    kind = errors.kind_named(str(body.get("type", "")))
    if kind is None:  # not one of ours: a bug, or a library below us
        return KinesisBatchError(f"a read task failed: {body.get('type')}: {body.get('message')}")
    return kind(body.get("message", ""))


__all__ = ["ERROR_MARKER", "GroupSpec", "RangeSpec", "raised_in_task", "task_error"]
