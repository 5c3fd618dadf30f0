"""A run's metrics as data (pure): named as the KCL names what means the same
(``RecordsProcessed``, ``BytesProcessed``, ``MillisBehindLatest``), with dimension ``Stream``,
and ``ShardId`` too at the detailed level.

- ``RecordsProcessed``, ``BytesProcessed``: the records read and their payload bytes.
- ``MillisBehindLatest``: the newest GetRecords' value at the end of the read (the largest of
  the run's shards): how far behind the tip the read stopped.
- ``LagSeconds``: the oldest unread record's age when the read began (the largest of the
  shards): what an alarm on a falling-behind consumer watches.
- ``RowsWritten``: the rows published (raw: one per record); ``DeadLetters``: records that
  became dead letters.
- ``ReadSeconds``, ``PublishSeconds``, ``CommitSeconds``: the steps' durations.
- ``BilledVCPUHours``, ``BilledMemoryGBHours``, ``BilledStorageGBHours``: what the read's EMR
  Serverless job run was billed (kinesis_batch.cost), per stream; none for a read that nobody
  bills per run.
- ``ControlPlaneThrottles``, ``ControlPlaneWaitSeconds``: the throttles the run's control-plane
  calls met and the seconds they waited (kinesis_batch.control.waiting), zero most hours: an
  alarm on them says the account's limits are shared by too many runs at once.

A run that read nothing says so: zero records, no lag figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kinesis_batch.control.waiting import Waited
from kinesis_batch.cost import ReadCost
from kinesis_batch.landing import Landing, total
from kinesis_batch.metrics.settings import DETAILED
from kinesis_batch.storage.records import ShardCommit

COUNT, BYTES, MILLISECONDS, SECONDS, NONE = "Count", "Bytes", "Milliseconds", "Seconds", "None"
STREAM, SHARD = "Stream", "ShardId"
#: The steps timed, by metric name.
STEPS = {"ReadSeconds": "read", "PublishSeconds": "publish", "CommitSeconds": "commit"}


@dataclass(frozen=True)
class Point:
    """One value of one metric: ``unit`` as CloudWatch names units; ``dimensions`` (name, value)."""

    name: str
    value: float
    unit: str
    dimensions: tuple[tuple[str, str], ...]


def points_of(
    stream: str,
    shards: Sequence[ShardCommit],
    timings: Mapping[str, float],
    level: str,
    cost: ReadCost | None = None,
    waited: Waited | None = None,
) -> list[Point]:
    """A run's metrics from its shards' commits, its steps' ``timings``, its read's ``cost`` and
    what its control-plane calls ``waited``: per stream, and at DETAILED per shard too."""
    where = ((STREAM, stream),)
    points = _counts(shards, where)
    points += [Point(name, timings[step], SECONDS, where) for name, step in STEPS.items() if step in timings]
    if cost is not None:
        points += [
            Point("BilledVCPUHours", cost.vcpu_hours, NONE, where),
            Point("BilledMemoryGBHours", cost.memory_gb_hours, NONE, where),
            Point("BilledStorageGBHours", cost.storage_gb_hours, NONE, where),
        ]
    if waited is not None:
        points += [
            Point("ControlPlaneThrottles", waited.throttles, COUNT, where),
            Point("ControlPlaneWaitSeconds", waited.seconds, SECONDS, where),
        ]
    if level == DETAILED:
        for shard in shards:
            points += _counts((shard,), (*where, (SHARD, shard.shard_id)))
    return points


def _counts(shards: Iterable[ShardCommit], where: tuple[tuple[str, str], ...]) -> list[Point]:
    shards = list(shards)
    landing = total([s.landing for s in shards]) or Landing()
    rows = landing.rows + sum(s.records for s in shards if s.landing is None)  # raw: a row per record
    points = [
        Point("RecordsProcessed", sum(s.records for s in shards), COUNT, where),
        Point("BytesProcessed", sum(s.bytes for s in shards), BYTES, where),
        Point("RowsWritten", rows, COUNT, where),
        Point("DeadLetters", landing.dead_letters, COUNT, where),
    ]
    behind = [s.millis_behind_latest for s in shards if s.millis_behind_latest is not None]
    if behind:
        points.append(Point("MillisBehindLatest", max(behind), MILLISECONDS, where))
    lags = [s.lag_at_start_ms for s in shards if s.lag_at_start_ms is not None]
    if lags:
        points.append(Point("LagSeconds", max(lags) / 1000, SECONDS, where))
    return points


__all__ = ["BYTES", "COUNT", "MILLISECONDS", "NONE", "SECONDS", "SHARD", "STREAM", "Point", "points_of"]
