"""The driver side of a run's Spark job: one job for the whole plan, a group of shard ranges
per task (kinesis_batch.grouping, read by kinesis_batch.spark.task), Spark schedules.

- One task per group, in the job form of the engine (kinesis_batch.spark.engine: an RDD job on
  a classic session, a DataFrame job on Spark Connect), each running
  kinesis_batch.spark.task.read_spec on its group. No row of records crosses into the JVM: a
  task returns one small row per range read.
- The job's jobs carry a tag of their own, so a lost lease cancels it at once (:class:`ReadJob`).
- :meth:`ReadJob.run` returns what each range read, from the attempts Spark reports
  successful; :meth:`ReadJob.keep` then writes it to the batch's ``_results/<shard>.json``
  (kinesis_batch.storage.staged) and deletes the files no result names (failed or lost
  attempts), so a batch holds exactly the files of one attempt per shard read. The caller
  decides between the two whether the batch is still its own.
- An error raised inside a task comes back as the library's own typed error
  (kinesis_batch.spark.spec.raised_in_task), not as Spark's wrapper.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from kinesis_batch.errors import ShutdownError
from kinesis_batch.events import Observer
from kinesis_batch.spark.engine import Engine, Rows
from kinesis_batch.spark.spec import GroupSpec
from kinesis_batch.spark.targets import RouteTargets
from kinesis_batch.spark.task import read_spec
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.staged import RangeResult

#: What each range read: (shard id, the result as JSON), the rows the tasks return.
Done = Rows


class ReadJob:
    """``ReadJob(engine, name).run(groups)`` reads every group in one Spark job; ``cancel()``
    (from any thread, e.g. the lease renewer's) stops it at once, and ``run`` then raises
    Spark's cancellation error. Cancelling before ``run`` starts the job makes ``run`` raise
    ShutdownError without starting it. ``observers`` travel to the tasks (they must pickle)."""

    def __init__(self, engine: Engine, name: str, *, observers: Sequence[Observer] = ()) -> None:
        self.engine = engine
        self.tag = f"kinesis-batch-{name}"
        self.observers = tuple(observers)
        self._cancelled = threading.Event()
        self.tasks = 0
        #: task attempts Spark saw fail (and retried, since the job succeeded); None: not known
        self.failed_attempts: int | None = 0

    def run(self, groups: Sequence[GroupSpec]) -> Done:
        """One task per group; what each range read, from the attempt Spark reports successful."""
        if not groups:
            return []
        jobs = self.engine.jobs
        try:
            with jobs.tagged(self.tag):
                if self._cancelled.is_set():
                    raise ShutdownError("the read was cancelled before it started")
                specs = [group.to_json() for group in groups]
                done: Done = jobs.each(specs, functools.partial(read_spec, observers=self.observers))
        finally:
            self.tasks, self.failed_attempts = len(groups), jobs.failed_attempts(self.tag)
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
            places = RouteTargets.from_json(group.targets).places()
            places += [Place.from_json(group.dead_data)] if group.dead_data else []
            prefixes = tuple(f"{dot}part-{spec.shard_id}-" for spec in group.ranges for dot in ("", "."))
            for data in places:
                for name in data.walk():
                    base = name.rpartition("/")[2]
                    if base.startswith(prefixes) and base not in kept:
                        data.delete(name)

    def cancel(self) -> None:
        self._cancelled.set()
        self.engine.jobs.cancel(self.tag)


def ship_module(engine: Engine, transform: str) -> None:
    """A transform's module where the tasks import it: a module file of the user's own (top
    level, not installed) is shipped with the job; an installed package must be installed where
    the executors run too."""
    import importlib

    name, _, function = transform.partition(":")
    if not function or "." in name:
        return  # a built-in, or a module of a package
    path = getattr(importlib.import_module(name), "__file__", None) or ""
    if path.endswith(".py") and "-packages" not in path:
        engine.jobs.ship(path)


def warm_up(engine: Engine) -> int:
    """The session's task slots, found by a job that reads nothing in as many tasks as Spark
    gives a job by default; the job also starts a Python worker on every slot (fork, imports),
    so that cost is paid once with Spark's start-up, not inside the read. Once per session: one
    a process reuses (a library user's, Dagster's resource) keeps its workers (about 0.2 s a run)."""
    session = engine.session
    with _WARMING:  # a group's runs start their reads side by side: one warm-up job for all
        slots = _SLOTS.get(session)
        if slots is None:
            slots = _SLOTS[session] = engine.jobs.slots(_imports)
    return slots


_SLOTS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()  # by session (gone with it)
_WARMING = threading.Lock()


def _imports() -> None:
    import boto3  # noqa: F401  (what the read tasks import, loaded once per worker)
    import pyarrow.parquet  # noqa: F401
