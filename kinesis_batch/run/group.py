"""A group of streams in one run (``kinesis-batch run --streams-file F --group G``): every
stream's catch-up run in this process, side by side, sharing its Spark session (one JVM, or one
Spark Connect session, for the whole group), each still the run of that stream alone.

- A stream's run is :class:`~kinesis_batch.run.catch_up.CatchUpRun`'s, unchanged: its own
  leases, checkpoints, output, dead letters, history, lineage events and metrics, its own
  publish and commit. Nothing of one stream's run is another's, so its state is what a run of
  it alone leaves, and a run of that stream alone beside the group never reads a shard twice
  (its lease table says so, as for any two runs).
- Its read is a Spark job of its own in the shared session, tagged and cancelled alone (a lost
  lease, a stop), taking at most its share of the session's task slots
  (``RunConfig.slot_share``): a big backlog cannot hold every slot while the small streams
  wait, and a task's error fails that stream's job only.
- A stream that fails is that stream's outcome, never the group's: the others publish and
  commit. The group's exit code is the worst of its streams' (:func:`worst`).
- A stop (SIGINT, SIGTERM) reaches every stream's run: each stops as a run alone does, and a
  stream not begun yet does not begin.
- The streams whose reads are EMR Serverless job runs share one job run (per application and
  settings, of up to ``defaults.STREAMS_PER_JOB_RUN`` streams) when the group's run has a
  gathering (kinesis_batch.serverless.gathering): each stream still makes, and judges, its own
  attempt. They take no turn of the local streams': they begin at once, and their job run
  starts as soon as they are ready, while the local streams read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kinesis_batch import defaults
from kinesis_batch.errors import IllegalArgumentError, classify
from kinesis_batch.run.report import RunReport
from kinesis_batch.settings import StreamSettings
from kinesis_batch.stopping import StopRequest

if TYPE_CHECKING:
    from kinesis_batch.serverless.gathering import JobRunGathering
    from kinesis_batch.spark.engine import Engine
    from kinesis_batch.spark.place import ReadPlace

#: One stream's run: builds its CatchUpRun and runs it (its construction's errors are its own too).
StreamRun = Callable[[], RunReport]


@dataclass(frozen=True)
class StreamOutcome:
    """What one stream of the group did: its report, or the error it ended with."""

    stream: str
    report: RunReport | None = None
    error: Exception | None = None

    @property
    def exit_code(self) -> int:
        return 0 if self.error is None else classify(self.error).exit_code

    def to_json(self, error_line: Callable[[Exception], str] = str) -> dict[str, Any]:
        said = {"stream": self.stream, "exit_code": self.exit_code}
        if self.error is not None:
            return {**said, "error": error_line(self.error)}
        assert self.report is not None
        return {**said, **self.report.to_json()}


@dataclass(frozen=True)
class GroupReport:
    group: str
    outcomes: tuple[StreamOutcome, ...]  # in the group's order
    seconds: float

    @property
    def exit_code(self) -> int:
        return worst(outcome.exit_code for outcome in self.outcomes)

    @property
    def failed(self) -> tuple[StreamOutcome, ...]:
        return tuple(outcome for outcome in self.outcomes if outcome.error is not None)

    def summary(self) -> str:
        records = sum(outcome.report.records for outcome in self.outcomes if outcome.report is not None)
        failed = f"; {len(self.failed)} failed: {', '.join(o.stream for o in self.failed)}" if self.failed else ""
        return (
            f"group {self.group}: {len(self.outcomes) - len(self.failed)} of {len(self.outcomes)} streams "
            f"ran, {records} records in {self.seconds:.1f} s{failed}"
        )

    def to_json(self, error_line: Callable[[Exception], str] = str) -> dict[str, Any]:
        return {
            "group": self.group,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "streams": [outcome.to_json(error_line) for outcome in self.outcomes],
        }


def in_a_group(settings: StreamSettings) -> None:
    """Refuse a stream whose settings name a Spark of their own: a group's streams share the
    group's run's (one process holds one session)."""
    if settings.spark_master != defaults.SPARK_MASTER or settings.spark_remote:
        name = "spark_remote" if settings.spark_remote else "spark_master"
        raise IllegalArgumentError(
            f"{name}: a group's streams share one Spark, the group's run's (run this stream alone for its own)"
        )


class SharedEngines:
    """A group's Spark sessions, one per place its reads run (each stream's run asks from its own
    thread): one JVM, or one Spark Connect session, for every stream of the group."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engines: dict[tuple[str, str, str], Callable[[], Engine]] = {}

    def of(self, place: ReadPlace) -> Callable[[], Engine]:
        with self._lock:  # a Spark Connect place connects here: once
            key = (place.where, place.master, place.remote)
            if key not in self._engines:
                self._engines[key] = place.engine()
            return self._engines[key]


def worst(codes: Iterable[int]) -> int:
    """The exit code that says most of several: a stop (128 + its signal) first, then anything
    unexpected (1), bad input or state (2: someone must act), a lost lease (3), retryable (4);
    0 when every one is 0."""

    def rank(code: int) -> int:
        return 0 if code >= 128 else code if code else 99

    return min(codes, key=rank, default=0)


def local_share(at_once: int, streams: Iterable[str], gathering: JobRunGathering | None = None) -> int:
    """The share of the session's task slots a local read of the group takes
    (``RunConfig.slot_share``): one of the ``at_once`` turns of the streams that read here (a
    stream ``gathering`` takes reads in a job run and takes none)."""
    local = sum(1 for stream in streams if gathering is None or not gathering.takes(stream))
    return max(1, min(at_once, local))


def run_group(
    group: str,
    runs: Mapping[str, StreamRun],
    *,
    at_once: int,
    stop: StopRequest,
    gathering: JobRunGathering | None = None,
) -> GroupReport:
    """Run every stream's run; each one's outcome, in ``runs``' order. The streams that read here
    take turns, ``at_once`` side by side; the streams ``gathering`` takes (their reads are job
    runs) take no turn: they all begin at once, beside them, and their job run starts as soon as
    they are ready, whatever the local streams are doing. A stream's error is caught as its
    outcome (any Exception: one stream's bug is not the group's); one whose turn comes after a
    stop was asked for is not begun."""
    started = time.monotonic()
    elsewhere = [stream for stream in runs if gathering is not None and gathering.takes(stream)]
    taken = set(elsewhere)
    local = [stream for stream in runs if stream not in taken]
    if gathering is not None:
        gathering.expect(len(elsewhere), len(elsewhere))

    def outcome(stream: str, run: StreamRun) -> StreamOutcome:
        gathered = gathering if stream in taken else None
        if gathered is not None:
            gathered.begin()
        try:
            stop.check(f"before stream {stream} began")
            return StreamOutcome(stream, report=run())
        except Exception as exc:
            return StreamOutcome(stream, error=exc)
        finally:
            if gathered is not None:
                gathered.end()

    with (
        ThreadPoolExecutor(max_workers=max(1, min(at_once, len(local))), thread_name_prefix="stream") as turns,
        ThreadPoolExecutor(max_workers=max(1, len(elsewhere)), thread_name_prefix="job-run-stream") as all_at_once,
    ):
        futures = {stream: all_at_once.submit(outcome, stream, runs[stream]) for stream in elsewhere}
        futures |= {stream: turns.submit(outcome, stream, runs[stream]) for stream in local}
        outcomes = tuple(futures[stream].result() for stream in runs)
    return GroupReport(group, outcomes, time.monotonic() - started)


__all__ = [
    "GroupReport", "SharedEngines", "StreamOutcome", "StreamRun", "in_a_group", "local_share", "run_group", "worst"
]  # fmt: skip
