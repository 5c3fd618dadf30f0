"""A group's job-run reads gathered into one EMR Serverless job run (kinesis_batch.run.group).

Each stream of a group whose read is a job run still makes its own attempt (checked, its earlier
attempts cancelled, its entry point and spec written into its own staging), then hands it to
the group's :class:`JobRunGathering` and waits. The streams that read as job runs take no local
slot (kinesis_batch.run.group begins them all at once, beside the local streams' turns), so once
every one of them began and each running one waits (:func:`ready`), the waiting attempts start
their job runs: one per application and settings, of at most ``per_job_run`` streams (a larger
set is split evenly, and the split said in one line: :func:`split`). The job's entry point reads
every attempt's spec side by side in one Spark session (kinesis_batch/cli/read_step.py), each
leaving its own result. So a group of fifty quiet-but-one streams pays one job run's start and
minimum, not fifty; a stream with nothing new hands nothing (its read step starts none).

- Each stream judges the job run by its own result, as a job run of its own would be judged
  (kinesis_batch.serverless.step): another stream's failure is not its own.
- A stream cancelled (its lease lost, a stop) before the job run started leaves the gathering;
  after, it asks the job to stop its read alone (a marker beside its spec, which the job polls),
  and waits for the job run to end, so nothing writes into its staging after. When every stream
  of a job run asked, the job run itself is cancelled.
- The job run's bill is split across its streams by the task seconds each read held in it (each
  of its Spark tasks counted for its read's Spark job's time, as the job measured it: a read
  stopped mid-way is billed for what it held, one of tiny records for its time, not its bytes;
  evenly when none held any), each share kept in that stream's history and commit record
  (``shared_by``: how many).
- A job run left behind by a crashed orchestrator is named as a group's
  (kinesis_batch.serverless.naming.GroupJobName), and a manifest of its members is written
  beside each member's spec before it starts: the next run of any member finds it there and
  cancels it (kinesis_batch.serverless.orphans).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

from kinesis_batch import defaults
from kinesis_batch.errors import NOTHING_PUBLISHED, DependencyError
from kinesis_batch.serverless import checks, states
from kinesis_batch.serverless.attempt import Attempt, JobResult
from kinesis_batch.serverless.job import JobRun, JobRunInfo
from kinesis_batch.serverless.naming import GroupJobName, group_tags
from kinesis_batch.serverless.request import spark_settings, start_job_run
from kinesis_batch.serverless.settings import ServerlessSettings
from kinesis_batch.serverless.step import ReadInputs, dashboard, failed, no_result, poll_seconds

T = TypeVar("T")


def split(members: Sequence[T], most: int) -> list[list[T]]:
    """Pure: ``members`` in order, in as few parts of at most ``most`` as can hold them, their
    sizes differing by one at most (130 by 64: 44, 43, 43)."""
    parts = -(-len(members) // max(1, most))
    size, extra = divmod(len(members), parts) if parts else (0, 0)
    cuts, start = [], 0
    for part in range(parts):
        end = start + size + (1 if part < extra else 0)
        cuts.append(list(members[start:end]))
        start = end
    return cuts


def ready(*, total: int, at_once: int, begun: int, ended: int, waiting: int) -> bool:
    """Pure: whether the waiting attempts start their job run now. Some wait, every stream that
    is running waits (none is still on its way to its read), and no other stream can begin beside
    them: every stream began, or every one of ``at_once`` slots is taken by a waiting one."""
    running = begun - ended
    return 0 < waiting == running and (begun >= total or running >= at_once)


class GatheredRead:
    """One stream's read step handed to the group's gathering: ``run`` makes its attempt, waits
    for the job run that reads it, and raises as a job run of its own would (kinesis_batch.
    serverless.step); ``cancel`` stops it from any thread. Afterwards ``info`` (its share of the
    job run's bill), ``result`` and ``cancelled`` (earlier attempts it cancelled) say what it was."""

    def __init__(self, gathering: JobRunGathering, inputs: ReadInputs) -> None:
        self.gathering, self.inputs = gathering, inputs
        self.attempt: Attempt | None = None
        self.target: checks.Target | None = None
        self.info: JobRunInfo | None = None
        self.result: JobResult | None = None
        self.state = ""  # the job run's, once it ended
        self.error: Exception | None = None  # why the job run reading it did not start
        self.cancelled: list[tuple[str, JobRunInfo]] = []
        self.asked_to_stop = False
        self.done = threading.Event()

    def run(self) -> None:
        attempt, self.target, self.cancelled = self.inputs.prepare()
        self.attempt = attempt
        self.gathering.wait(self)
        if self.error is not None:  # the group's job run did not start: each of its reads says why
            raise copy.copy(self.error) from self.error
        if self.asked_to_stop:  # whatever the job left: a lost lease, a stop (the caller says which)
            when = "before its job run started" if self.info is None else f"in job run {self.info.job_run_id}"
            raise DependencyError(f"read of batch {self.inputs.batch_id} stopped {when}; {NOTHING_PUBLISHED}")
        assert self.info is not None, "the job run ended without saying what it was"
        mine = self.result if self.result is not None and self.result.attempt == attempt.id else None
        if mine is None and self.state == states.SUCCESS:
            raise no_result(self.info, attempt)
        if mine is None or mine.exit_code != 0:
            raise failed(self.info, mine)

    def cancel(self) -> None:
        self.gathering.cancel(self)


class JobRunGathering:
    """The job-run reads of one group's run: ``streams``, the group's streams whose reads are job
    runs (kinesis_batch.run.group begins them without taking a local slot), at most
    ``per_job_run`` in one job run; ``progress`` says a split. :meth:`expect` once,
    :meth:`begin` and :meth:`end` around each of those streams' runs
    (kinesis_batch.run.group.run_group), :meth:`wait` from a stream's read step
    (:class:`GatheredRead`). Thread-safe."""

    def __init__(
        self,
        group: str,
        streams: Collection[str] = (),
        *,
        per_job_run: int = defaults.STREAMS_PER_JOB_RUN,
        progress: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.group, self.streams = group, frozenset(streams)
        self.per_job_run, self.progress = max(1, per_job_run), progress
        self._lock = threading.Lock()
        self._total, self._at_once, self._begun, self._ended = 0, 1, 0, 0
        self._waiting: list[GatheredRead] = []
        self._jobs: dict[int, SharedJobRun] = {}  # id(member) -> the job run reading it

    def takes(self, stream: str) -> bool:
        """Whether ``stream``'s read is a job run gathered here (it then takes no local slot)."""
        return stream in self.streams

    def expect(self, total: int, at_once: int) -> None:
        with self._lock:
            self._total, self._at_once = total, max(1, at_once)

    def begin(self) -> None:
        with self._lock:
            self._begun += 1

    def end(self) -> None:
        with self._lock:
            self._ended += 1
            self._launch_if_ready()

    def wait(self, member: GatheredRead) -> None:
        """Hand ``member``'s attempt over; return once the job run reading it ended (or it was
        cancelled before one started)."""
        with self._lock:
            if member.asked_to_stop:
                return
            self._waiting.append(member)
            self._launch_if_ready()
        member.done.wait()

    def cancel(self, member: GatheredRead) -> None:
        with self._lock:
            member.asked_to_stop = True
            if member in self._waiting:  # no job run reads it yet: it leaves
                self._waiting.remove(member)
                member.done.set()
                return
            job = self._jobs.get(id(member))
        if job is not None:
            job.stop(member)

    def _launch_if_ready(self) -> None:
        """Under the lock: the waiting attempts' job runs, one per application and settings."""
        if not ready(
            total=self._total, at_once=self._at_once, begun=self._begun, ended=self._ended, waiting=len(self._waiting)
        ):
            return
        by_settings: dict[ServerlessSettings, list[GatheredRead]] = {}
        for member in self._waiting:
            by_settings.setdefault(member.inputs.settings, []).append(member)
        self._waiting = []
        for members in by_settings.values():
            parts = split(members, self.per_job_run)
            if len(parts) > 1:
                self.progress(
                    f"group {self.group}: {len(members)} streams' reads on application "
                    f"{members[0].inputs.settings.application_id} in {len(parts)} job runs of "
                    f"{', '.join(str(len(part)) for part in parts)} (at most {self.per_job_run} a job run)"
                )
            for part in parts:
                job = SharedJobRun(self.group, part)
                self._jobs.update({id(member): job for member in part})
                threading.Thread(target=job.run, name=f"job-run-{self.group}", daemon=True).start()


class SharedJobRun:
    """One job run reading ``members``' attempts (each with the same application and settings)."""

    def __init__(self, group: str, members: list[GatheredRead]) -> None:
        self.group, self.members = group, members
        self.job: JobRun | None = None
        self._lock = threading.Lock()
        self._stopping: set[int] = set()

    def run(self) -> None:
        first = self.members[0]
        try:
            self._run(first)
        except Exception as exc:  # every member's read fails with it, each in its own thread
            for member in self.members:
                if member.info is None:
                    member.error = exc
        finally:
            for member in self.members:
                member.done.set()

    def _run(self, first: GatheredRead) -> None:
        assert first.target is not None
        read, target = first.inputs, first.target
        name = GroupJobName.new(self.group)
        attempts = [member.attempt for member in self.members if member.attempt is not None]
        manifest = [member.inputs.name(member.attempt) for member in self.members if member.attempt is not None]
        for attempt in attempts:  # before it starts: the next run of any member finds it by its own
            attempt.write_members(manifest)
        request = start_job_run(
            read.settings,
            name,
            entry_point=attempts[0].entry_point,
            spec=[attempt.spec for attempt in attempts],
            conf=spark_settings(read.settings, target.python, target.interpreter, target.arch),
            tags=group_tags(self.group, worker_id=read.worker_id),
        )
        with self._lock:
            self.job = JobRun(read.client, request, poll_seconds=poll_seconds(), progress=read.progress)
            if len(self._stopping) == len(self.members):
                self.job.cancel()
        ended: dict[str, Any] = {}
        try:
            ended = self.job.run()
        finally:
            if self.job.job_run_id is not None:  # started: what it was, and its bill, split
                link = dashboard(read.client, read.settings.application_id, self.job.job_run_id, read.progress)
                self._split(self.job.info(link), str(ended.get("state", "")))

    def _split(self, info: JobRunInfo, state: str) -> None:
        results = [member.attempt.result() if member.attempt is not None else None for member in self.members]
        held = [max(0.0, result.task_seconds) if result is not None else 0.0 for result in results]
        total = sum(held)
        for member, result, mine in zip(self.members, results, held, strict=True):
            share = mine / total if total else 1 / len(self.members)
            member.info = info.share(share, shared_by=len(self.members), task_seconds=mine)
            member.result = result
            member.state = state

    def stop(self, member: GatheredRead) -> None:
        """``member``'s read asked to stop alone (its marker, which the job polls); the job run
        cancelled once every member asked."""
        assert member.attempt is not None
        member.attempt.ask_to_stop()
        with self._lock:
            self._stopping.add(id(member))
            if self.job is not None and len(self._stopping) == len(self.members):
                self.job.cancel()


__all__ = ["GatheredRead", "JobRunGathering", "SharedJobRun", "ready", "split"]
