"""The Spark a run's read step runs on: a SparkSession, classic (local, spark-submit) or remote
(Spark Connect), and how that session's jobs run, are tagged, cancelled and counted.

The read's tasks are the same function on both (kinesis_batch.spark.task.read_spec, one item
each); the form of the job that runs them, and the control of jobs, are chosen where the
session is made (:func:`classic`, :func:`remote`), never asked of the session later:
- classic: an RDD job (``parallelize`` then ``mapPartitions``): only the SparkContext, so a
  run's process never starts Spark SQL (about 1 s of CPU and 1 s of its start, measured with
  the class-data archive); the context's job groups (cancelling kills the tasks' Python
  workers) and its status tracker (the failed task attempts a run reports);
- remote: a DataFrame job (``range(n)`` in n partitions, ``mapInArrow``), the only form Spark
  Connect has; the session's operation tags (``addTag``/``interruptTag``, Spark 3.5+); a Spark
  Connect client sees no task attempts, so their count is unknown (None).
Nothing here needs a SparkContext on a remote session. Either way no record crosses into the
JVM: a task returns one small row per range read.
"""

from __future__ import annotations

import contextlib
import functools
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.parsers import parse_connect_url

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession


#: A task's rows: (key, value) text pairs (the read's: shard id, result as JSON).
Rows = list[tuple[str, str]]
#: What a task runs: one item in, its rows out.
Task = Callable[[str], Iterator[tuple[str, str]]]


class Jobs(Protocol):
    """How a session's jobs run, are grouped under a name, cancelled and counted."""

    def each(self, items: Sequence[str], task: Task) -> Rows:
        """One job of one task per item, ``task(item)`` in it (``task`` must pickle); the rows
        of every task, from the attempts Spark reports successful."""
        ...

    def slots(self, ready: Callable[[], None]) -> int:
        """The task slots a job gets by default, found by a job of that many tasks, each of which
        calls ``ready`` (in a Python worker, which it starts: fork, imports)."""
        ...

    def tagged(self, tag: str) -> contextlib.AbstractContextManager[None]:
        """Jobs started by this thread inside the block carry ``tag``."""
        ...

    def cancel(self, tag: str) -> None:
        """Stop every running job of ``tag`` now (from any thread)."""
        ...

    def failed_attempts(self, tag: str) -> int | None:
        """Task attempts that failed (and were retried) in jobs of ``tag``; None: not known."""
        ...

    def ship(self, path: str) -> None:
        """Make a Python file importable where the tasks run."""
        ...


@dataclass(frozen=True)
class Engine:
    """A Spark session and the control of its jobs."""

    session: Any  # pyspark.sql.SparkSession, classic or Spark Connect's (a class of its own)
    jobs: Jobs


def classic(session: SparkSession) -> Engine:
    """A session in this process (local, or spark-submit's driver)."""
    return Engine(session, _GroupJobs(session.sparkContext))


def spark_submitted() -> Engine:
    """The session of a spark-submitted entry point: name, master and conf are spark-submit's."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from kinesis_batch.spark import converters

    converters.lighten()  # before the context's first JVM call
    return classic(SparkSession(SparkContext.getOrCreate()))


def remote(url: str) -> Engine:
    """A Spark Connect session to ``url`` (``sc://host:port``), checked to answer: a server that
    does not is one line (InvalidStateError, exit 2), before the run takes a lease."""
    host, port = parse_connect_url(url)
    try:
        from pyspark.sql.connect.session import SparkSession as RemoteSession
    except ImportError as exc:  # an install to make, not a server to wait for: exit 2
        raise InvalidStateError(
            f"--spark-remote {url}: Spark Connect's client is not installed "
            f"(pip install 'kinesis-batch[spark-connect]'): {exc}"
        ) from exc
    try:  # the client would retry a closed port for minutes: ask the socket first
        socket.create_connection((host, port), timeout=10).close()
    except OSError as exc:
        raise InvalidStateError(f"Spark Connect at {url} does not answer: {exc}") from exc
    try:
        session = RemoteSession.builder.remote(url).getOrCreate()
        session.range(1).collect()  # the builder connects lazily: ask once
    except Exception as exc:  # grpc's and pyspark's errors alike: the server is not there
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidStateError(f"Spark Connect at {url} does not answer: {first}") from exc
    return Engine(session, _TaggedJobs(session))


class _GroupJobs:
    def __init__(self, context: SparkContext) -> None:
        self.context = context

    def each(self, items: Sequence[str], task: Task) -> Rows:
        rows: Rows = (
            self.context.parallelize(list(items), len(items)).mapPartitions(functools.partial(_each, task)).collect()
        )
        return rows

    def slots(self, ready: Callable[[], None]) -> int:
        slots = self.context.defaultParallelism
        self.context.parallelize(range(slots), slots).foreachPartition(functools.partial(_ready, ready))
        return slots

    @contextlib.contextmanager
    def tagged(self, tag: str) -> Iterator[None]:
        # interruptOnCancel: a cancelled task's Python worker is killed, not left to finish.
        self.context.setJobGroup(tag, "kinesis-batch read", interruptOnCancel=True)
        try:
            yield
        finally:
            self.context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]

    def cancel(self, tag: str) -> None:
        self.context.cancelJobGroup(tag)

    def failed_attempts(self, tag: str) -> int | None:
        tracker = self.context.statusTracker()
        stages = [
            stage
            for job in tracker.getJobIdsForGroup(tag)
            if (info := tracker.getJobInfo(job)) is not None
            for stage in info.stageIds
        ]
        found = (tracker.getStageInfo(stage) for stage in stages)
        return sum(stage_info.numFailedTasks for stage_info in found if stage_info is not None)

    def ship(self, path: str) -> None:
        self.context.addPyFile(path)


class _TaggedJobs:
    def __init__(self, session: Any) -> None:
        self.session = session

    def each(self, items: Sequence[str], task: Task) -> Rows:
        count = len(items)
        arrow = functools.partial(_each_row, task, tuple(items))
        frame = self.session.range(0, count, 1, count).mapInArrow(arrow, "key string, value string")
        return [(row[0], row[1]) for row in frame.collect()]

    def slots(self, ready: Callable[[], None]) -> int:
        arrow = functools.partial(_ready_row, ready)
        return len(self.session.range(0, 1 << 16).mapInArrow(arrow, "ready boolean").collect())

    @contextlib.contextmanager
    def tagged(self, tag: str) -> Iterator[None]:
        self.session.addTag(tag)
        try:
            yield
        finally:
            self.session.removeTag(tag)

    def cancel(self, tag: str) -> None:
        self.session.interruptTag(tag)

    def failed_attempts(self, tag: str) -> int | None:
        return None  # a Connect client sees operations, not task attempts

    def ship(self, path: str) -> None:
        self.session.addArtifacts(path, pyfile=True)


def _each(task: Task, items: Iterable[str]) -> Iterator[tuple[str, str]]:
    for item in items:
        yield from task(item)


def _ready(ready: Callable[[], None], numbers: Iterable[int]) -> None:
    ready()
    for _ in numbers:
        pass


def _each_row(task: Task, items: tuple[str, ...], batches: Iterable[Any]) -> Iterator[Any]:
    """mapInArrow's form: each row of ``batches`` is the number of an item."""
    import pyarrow as pa

    for batch in batches:
        for number in batch.column(0).to_pylist():
            rows = list(task(items[number]))
            keys, values = [key for key, _ in rows], [value for _, value in rows]
            yield pa.record_batch([pa.array(keys, pa.string()), pa.array(values, pa.string())], names=["key", "value"])


def _ready_row(ready: Callable[[], None], batches: Iterable[Any]) -> Iterator[Any]:
    import pyarrow as pa

    ready()
    for _ in batches:
        pass
    yield pa.record_batch([pa.array([True])], names=["ready"])


__all__ = ["Engine", "Jobs", "Rows", "Task", "classic", "remote", "spark_submitted"]
