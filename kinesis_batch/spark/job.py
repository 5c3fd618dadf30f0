"""The driver side of a run's Spark job: one job for the whole plan, a group of shard ranges
per task (kinesis_batch.grouping, read by kinesis_batch.spark.task), Spark schedules.

- The driver writes each range's result to the batch's ``_results/<shard>.json`` from the
  attempts Spark reports successful, and deletes the files no result names (failed or lost
  attempts), so a batch holds exactly one file per shard read.
- The job runs in a job group of its own, so a lost lease cancels it at once (:class:`ReadJob`).
- An error raised inside a task comes back as the library's own typed error, with its message
  (:func:`raised_in_task`), not as Spark's wrapper.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kinesis_batch import errors
from kinesis_batch.errors import KinesisBatchError
from kinesis_batch.output.place import Place
from kinesis_batch.shards.reader import ReadResult
from kinesis_batch.spark.task import ERROR_MARKER, GroupSpec, read_task

if TYPE_CHECKING:
    from pyspark import SparkContext


class ReadJob:
    """``ReadJob(spark, name).run(groups, results)`` reads every group in one Spark job;
    ``cancel()`` (from any thread, e.g. the lease renewer's) stops it at once, and ``run``
    then raises Spark's cancellation error. Cancelling before ``run`` starts the job makes
    ``run`` cancel it as soon as it is submitted."""

    def __init__(self, spark: SparkContext, name: str) -> None:
        self.context = spark
        self.group = f"kinesis-batch-{name}"
        self._cancelled = threading.Event()
        self.tasks = 0
        self.failed_attempts = 0  # task attempts Spark saw fail (and retried, since the job succeeded)

    def run(self, groups: Sequence[GroupSpec], results: Place) -> None:
        """One task per group. Writes each range's result, from the attempt Spark reports
        successful, to ``results``, and deletes the files of the other attempts."""
        if not groups:
            return
        context = self.context
        # interruptOnCancel: a cancelled task's Python worker is killed, not left to finish.
        context.setJobGroup(self.group, "kinesis-batch read", interruptOnCancel=True)
        try:
            if self._cancelled.is_set():
                context.cancelJobGroup(self.group)
            specs = [group.to_json() for group in groups]
            done = context.parallelize(specs, len(specs)).mapPartitions(read_task).collect()
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
            self.tasks, self.failed_attempts = len(groups), self._failed_attempts()
        for shard_id, result in done:
            results.write_text(f"{shard_id}.json", result)
        kept = {json.loads(result)["file"] for _, result in done}
        for group in groups:
            data = Place.from_json(group.data)
            for spec in group.ranges:
                for name in data.list(f"part-{spec.shard_id}-") + data.list(f".part-{spec.shard_id}-"):
                    if name not in kept:
                        data.delete(name)

    def _failed_attempts(self) -> int:
        tracker = self.context.statusTracker()
        stages = [
            stage
            for job in tracker.getJobIdsForGroup(self.group)
            if (info := tracker.getJobInfo(job)) is not None
            for stage in info.stageIds
        ]
        return sum(
            stage_info.numFailedTasks for stage in stages if (stage_info := tracker.getStageInfo(stage)) is not None
        )

    def cancel(self) -> None:
        self._cancelled.set()
        self.context.cancelJobGroup(self.group)


def raised_in_task(exc: BaseException) -> KinesisBatchError | None:
    """The error a task raised, rebuilt from the marker line in Spark's failure text (same
    class, same message); None when the failure did not come from a task's own error."""
    text = str(exc)
    at = text.find(ERROR_MARKER)
    if at < 0:
        return None
    try:
        body, _ = json.JSONDecoder().raw_decode(text, at + len(ERROR_MARKER))
    except ValueError:
        return None
    kind = _ERRORS.get(body.get("type", ""))
    if kind is None:  # not one of ours: a bug, or a library below us
        return KinesisBatchError(f"a read task failed: {body.get('type')}: {body.get('message')}")
    return kind(body.get("message", ""))


def _subclasses(root: type[KinesisBatchError]) -> Iterator[type[KinesisBatchError]]:
    yield root
    for child in root.__subclasses__():
        yield from _subclasses(child)


_ERRORS = {kind.__name__: kind for kind in _subclasses(errors.KinesisBatchError)}


def read_results(results: Place) -> dict[str, ReadResult]:
    """What each task read (the reader's own ReadResult), by shard."""
    return {shard: ReadResult(**body) for shard, (body, _) in _results(results).items()}


def staged_files(results: Place) -> set[str]:
    """The Parquet files the results name: the only rows of the batch."""
    return {file for _, file in _results(results).values() if file}


def _results(results: Place) -> dict[str, tuple[dict[str, Any], str | None]]:
    found = {}
    for name in results.list():
        if name.endswith(".json") and not name.startswith("."):
            body = json.loads(results.read_text(name) or "{}")
            file = body.pop("file", None)
            found[name.removesuffix(".json")] = (body, file)
    return found


def warm_up(spark: SparkContext) -> None:
    """Start a Python worker on every task slot (fork, imports) with a job that reads nothing, so
    that cost is paid once with Spark's start-up, not inside the read."""
    slots = spark.defaultParallelism
    spark.parallelize(range(slots), slots).mapPartitions(_ready).collect()


def _ready(numbers: Iterable[int]) -> Iterator[bool]:
    import boto3  # noqa: F401  (what the read tasks import, loaded once per worker)
    import pyarrow.parquet  # noqa: F401

    for _ in numbers:
        yield True
