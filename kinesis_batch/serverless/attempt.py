"""One attempt of a batch's read step as a job run, and its files in the batch's staging: the
entry point, the spec it reads and the result it leaves. The orchestrator writes the first two
before it starts the job run, the job writes the result as its last act, and the orchestrator
believes a job's SUCCESS only with this attempt's result in hand: a job that ended without
reading, or a result an earlier attempt left, is never taken for an empty read.

    <staging of the batch>/_emr_serverless/<attempt>/read_step.py    the job driver's entry point
                                                    /spec.json       the run's configuration and id
                                                    /result.json     what the job did (its last act)
                                                    /stop.json       the orchestrator's ask that a
                                                                     group's job stop this read alone
                                                    /members.json    a group's job run: every read it
                                                                     holds (the next run of any of
                                                                     them finds its own batch there)
                          /_emr_serverless/job_run.json              the job run that read the batch
                                                                     (the orchestrator's, for publish)
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kinesis_batch.aws import S3Settings
from kinesis_batch.environment import READ_STEP
from kinesis_batch.read_spec import ReadStepSpec
from kinesis_batch.serverless.job import JobRunInfo
from kinesis_batch.serverless.naming import JobName
from kinesis_batch.storage.place import Place

FOLDER = "_emr_serverless"
ENTRY_POINT, SPEC, RESULT, JOB_RUN, STOP = "read_step.py", "spec.json", "result.json", "job_run.json", "stop.json"
MEMBERS = "members.json"


@dataclass(frozen=True)
class Attempt:
    """The files of attempt ``id`` of a batch's read step, under ``place``."""

    id: str
    place: Place

    @classmethod
    def new(cls, staging: Place) -> Attempt:
        attempt = uuid.uuid4().hex[:12]
        return cls(attempt, staging.child(FOLDER, attempt))

    @property
    def entry_point(self) -> str:
        return self.place.child(ENTRY_POINT).uri

    @property
    def spec(self) -> str:
        return self.place.child(SPEC).uri

    def write_inputs(self, config: dict[str, Any], run_id: str) -> None:
        """The entry point and the spec (``config``: RunConfig.to_json of the read)."""
        self.place.write_text(ENTRY_POINT, READ_STEP.read_text())
        spec = ReadStepSpec(config, run_id, self.id, self.place.child(RESULT).to_json())
        self.place.write_text(SPEC, spec.to_json())

    def ask_to_stop(self) -> None:
        """Ask the job reading this attempt beside others (a group's) to stop it alone."""
        self.place.write_text(STOP, json.dumps({"attempt": self.id}))

    def write_members(self, members: Sequence[JobName]) -> None:
        """The reads of the group's job run this attempt is one of (written before it starts)."""
        self.place.write_text(MEMBERS, json.dumps([member.to_json() for member in members]))

    def result(self) -> JobResult | None:
        """What this attempt's job left (None: nothing)."""
        return JobResult.read(self.place.child(RESULT))


@dataclass(frozen=True)
class JobResult:
    """The read step's outcome as the job wrote it: its exit code (the command line's), its
    error's line and kind (``errors.kind_of``), its Spark tasks, and the task
    seconds they held (kinesis_batch.run.read: each task counted for its read's Spark job's
    time, a read stopped or failed too)."""

    attempt: str
    exit_code: int
    error: str = ""
    tasks: int = 0
    failed_task_attempts: int | None = 0
    task_seconds: float = 0.0
    kind: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "exit_code": self.exit_code,
            "error": self.error,
            "tasks": self.tasks,
            "failed_task_attempts": self.failed_task_attempts,
            "task_seconds": round(self.task_seconds, 3),
            "kind": self.kind,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> JobResult:
        return cls(
            str(body["attempt"]),
            int(body["exit_code"]),
            str(body.get("error") or ""),
            int(body.get("tasks") or 0),
            body.get("failed_task_attempts"),
            float(body.get("task_seconds") or 0.0),
            str(body.get("kind") or ""),
        )

    def write(self, place: Place) -> None:
        """The job's last act: ``place`` is the spec's ``result``."""
        parent, _, name = place.uri.rpartition("/")
        Place(parent, place.s3).write_text(name, json.dumps(self.to_json()))

    @classmethod
    def read(cls, place: Place) -> JobResult | None:
        """What :meth:`write` left at ``place`` (None: nothing, as of a step killed or never started)."""
        parent, _, name = place.uri.rpartition("/")
        text = Place(parent, place.s3).read_text(name)
        return cls.from_json(json.loads(text)) if text is not None else None


def record_job_run(staging: Place, info: JobRunInfo) -> None:
    """The job run that read the batch, for the publish step (another process, in Airflow)."""
    staging.child(FOLDER).write_text(JOB_RUN, json.dumps(info.to_json()))


def recorded_job_run(staging: Place) -> JobRunInfo | None:
    text = staging.child(FOLDER).read_text(JOB_RUN)
    return JobRunInfo.from_json(json.loads(text)) if text is not None else None


def members_beside(specs: Sequence[str], s3: S3Settings) -> tuple[JobName, ...]:
    """The reads of a group's job run whose arguments are ``specs``, from the first manifest
    found beside one of them (each member's staging holds one: a member whose staging was
    settled since does not hide the others); () when none is left."""
    for spec in specs:
        folder, _, _ = spec.rpartition("/")
        text = Place(folder, s3).read_text(MEMBERS)
        if text is not None:
            return tuple(JobName.from_json(member) for member in json.loads(text))
    return ()


__all__ = ["FOLDER", "MEMBERS", "Attempt", "JobResult", "members_beside", "record_job_run", "recorded_job_run"]
