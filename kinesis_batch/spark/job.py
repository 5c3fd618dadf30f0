"""The driver side of a run's Spark job: one job for the whole plan, a group of shard ranges
per task (kinesis_batch.grouping, read by kinesis_batch.spark.task), Spark schedules.

- The job runs in a job group of its own, so a lost lease cancels it at once (:class:`ReadJob`).
- :meth:`ReadJob.run` returns what each range read, from the attempts Spark reports
  successful; :meth:`ReadJob.keep` then writes it to the batch's ``_results/<shard>.json``
  (kinesis_batch.output.staged) and deletes the files no result names (failed or lost
  attempts), so a batch holds exactly the files of one attempt per shard read. The caller
  decides between the two whether the batch is still its own.
- An error raised inside a task comes back as the library's own typed error
  (kinesis_batch.spark.spec.raised_in_task), not as Spark's wrapper.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kinesis_batch.events import Observer
from kinesis_batch.output.place import Place
from kinesis_batch.output.staged import RangeResult
from kinesis_batch.spark.routed_files import RouteTargets
from kinesis_batch.spark.spec import GroupSpec
from kinesis_batch.spark.task import read_task

if TYPE_CHECKING:
    from pyspark import SparkContext

#: What each range read: (shard id, the result as JSON), as the tasks return it.
Done = list[tuple[str, str]]


class ReadJob:
    """``ReadJob(spark, name).run(groups)`` reads every group in one Spark job; ``cancel()``
    (from any thread, e.g. the lease renewer's) stops it at once, and ``run`` then raises
    Spark's cancellation error. Cancelling before ``run`` starts the job makes ``run`` cancel
    it as soon as it is submitted. ``observers`` travel to the tasks (they must pickle)."""

    def __init__(self, spark: SparkContext, name: str, *, observers: Sequence[Observer] = ()) -> None:
        self.context = spark
        self.group = f"kinesis-batch-{name}"
        self.observers = tuple(observers)
        self._cancelled = threading.Event()
        self.tasks = 0
        self.failed_attempts = 0  # task attempts Spark saw fail (and retried, since the job succeeded)

    def run(self, groups: Sequence[GroupSpec]) -> Done:
        """One task per group; what each range read, from the attempt Spark reports successful."""
        if not groups:
            return []
        context = self.context
        # interruptOnCancel: a cancelled task's Python worker is killed, not left to finish.
        context.setJobGroup(self.group, "kinesis-batch read", interruptOnCancel=True)
        try:
            if self._cancelled.is_set():
                context.cancelJobGroup(self.group)
            specs = [group.to_json() for group in groups]
            task = functools.partial(read_task, observers=self.observers)
            done: Done = context.parallelize(specs, len(specs)).mapPartitions(task).collect()
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
            self.tasks, self.failed_attempts = len(groups), self._failed_attempts()
        return done

    @staticmethod
    def keep(done: Done, groups: Sequence[GroupSpec], results: Place) -> None:
        """Write each range's result to ``results`` and delete the files no result names (of
        rows and of dead letters)."""
        kept: set[str] = set()
        for shard_id, text in done:
            results.write_text(f"{shard_id}.json", text)
            result = RangeResult.from_json(text)
            # By base name (each holds a uuid): places may nest (a parquet staging holds a routed run's new routes).
            kept |= {f.name.rpartition("/")[2] for f in (*result.files, *result.dead_letter_files, *result.held_files)}
        for group in groups:
            places = [Place.from_json(group.data)] + ([Place.from_json(group.dead_data)] if group.dead_data else [])
            if group.routes is not None:
                places += RouteTargets.from_json(group.routes).places()
            prefixes = tuple(f"{dot}part-{spec.shard_id}-" for spec in group.ranges for dot in ("", "."))
            for data in places:
                for name in data.walk():
                    base = name.rpartition("/")[2]
                    if base.startswith(prefixes) and base not in kept:
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


def ship_module(spark: SparkContext, transform: str) -> None:
    """A transform's module where the tasks import it: a module file of the user's own (top
    level, not installed) is shipped with the job; an installed package must be installed where
    the executors run too."""
    import importlib

    name, _, function = transform.partition(":")
    if not function or "." in name:
        return  # a built-in, or a module of a package
    path = getattr(importlib.import_module(name), "__file__", None) or ""
    if path.endswith(".py") and "-packages" not in path:
        spark.addPyFile(path)


def warm_up(spark: SparkContext) -> None:
    """Start a Python worker on every task slot (fork, imports) with a job that reads nothing, so
    that cost is paid once with Spark's start-up, not inside the read. Once per context: one a
    process reuses (a library user's, Dagster's resource) keeps its workers (about 0.1 s a run)."""
    if spark in _WARMED:
        return
    slots = spark.defaultParallelism
    spark.parallelize(range(slots), slots).mapPartitions(_ready).collect()
    _WARMED.add(spark)


_WARMED: weakref.WeakSet[Any] = weakref.WeakSet()  # the contexts warmed up (gone with them)


def _ready(numbers: Iterable[int]) -> Iterator[bool]:
    import boto3  # noqa: F401  (what the read tasks import, loaded once per worker)
    import pyarrow.parquet  # noqa: F401

    for _ in numbers:
        yield True
