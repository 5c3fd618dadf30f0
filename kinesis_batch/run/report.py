"""What a run did, as the library reports it: a value, its JSON (``kinesis-batch run --json``,
the orchestrators' metadata) and its lines for people (the command line's summary). What the
batch moved is its commit record's, held whole: the figures have one home."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kinesis_batch.control.waiting import Waited, total
from kinesis_batch.landing import Landing, json_fields
from kinesis_batch.serverless.job import JobRunInfo
from kinesis_batch.storage.records import CommitRecord, ShardCommit


@dataclass(frozen=True)
class RunReport:
    run_id: str
    batch_id: str
    record: CommitRecord | None  # the batch's, as published (None: nothing new to publish)
    recovered: dict[str, str]  # shard -> "rolled forward" | "discarded" | "cleared"
    leased_elsewhere: dict[str, str]
    waiting: dict[str, tuple[str, ...]]
    seconds: float
    output: str = ""
    # Where the time went: start (recover, plan, lease), spark_start, read (the job), publish, commit.
    timings: dict[str, float] = field(default_factory=dict)
    tasks: int = 0  # Spark tasks of the read, each a group of shards
    failed_task_attempts: int | None = 0  # task attempts that failed and were retried (None: not known)
    job_run: JobRunInfo | None = None  # the read's EMR Serverless job run, and what it was billed
    # What its control-plane calls met, by operation (kinesis_batch.control.waiting): none, mostly.
    control_plane: dict[str, Waited] = field(default_factory=dict)

    @property
    def published(self) -> bool:
        return self.record is not None

    @property
    def shards(self) -> tuple[ShardCommit, ...]:
        """What the published batch moved, per shard (none: nothing published)."""
        return self.record.shards if self.record else ()

    @property
    def records(self) -> int:
        return self.record.records if self.record else 0

    @property
    def landing(self) -> Landing | None:
        """What the run's records became when it decoded (None: raw rows, or nothing published)."""
        return self.record.landing if self.record else None

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "batch_id": self.batch_id,
            "published": self.published,
            "output": self.output,
            "records": self.records,
            **self._landed(),
            "seconds": round(self.seconds, 3),
            "timings": self.timings,
            "tasks": self.tasks,
            "failed_task_attempts": self.failed_task_attempts,
            "shards": [
                {
                    "shard_id": s.shard_id,
                    "start": str(s.start),
                    "end": str(s.end),
                    "records": s.records,
                    **json_fields(s.landing),
                    "reached_shard_end": s.reached_shard_end,
                }
                for s in self.shards
            ],
            "recovered": self.recovered,
            "leased_elsewhere": self.leased_elsewhere,
            "waiting": {shard: list(parents) for shard, parents in self.waiting.items()},
            **({"job_run": self.job_run.to_json()} if self.job_run else {}),
            "control_plane": {operation: met.to_json() for operation, met in self.control_plane.items()},
        }

    def _landed(self) -> dict[str, Any]:
        """The run's landing as JSON; its ``changes`` are all it did (routed: every table's too)."""
        landing = self.landing
        body = json_fields(landing)
        if landing is not None and landing.table_changes:
            body["changes"] = landing.all_changes
        return body

    def lines(self, what: str = "run") -> list[str]:
        """The shards skipped, then one summary line (``what`` names the run: run, backfill)."""
        skipped = [f"skipped {shard}: leased by {owner}" for shard, owner in sorted(self.leased_elsewhere.items())]
        published = self.output if self.published else "nothing new to publish"
        landing = self.landing
        landed = f" ({landing.said()})" if landing else ""
        summary = (
            f"{what} {self.run_id}: {self.records} records{landed} from {len(self.shards)} shards "
            f"in {self.seconds:.1f} s; {published}"
        )
        job = self.job_run
        billed = [f"read by EMR Serverless job run {job.job_run_id} ({job.arn}): {job.said()}"] if job else []
        ui = [f"its Spark UI: {job.dashboard}"] if job and job.dashboard else []
        return [*skipped, *billed, *ui, *self._waited(), summary]

    def _waited(self) -> list[str]:
        """One line when the control plane made the run wait: the account's limits are shared."""
        if not self.control_plane:
            return []
        met = total(self.control_plane.values())
        return [
            f"waited {met.seconds:.1f} s on the control plane ({met.throttles} throttles, {met.failures} dropped "
            f"or failed calls: {', '.join(sorted(self.control_plane))})"
        ]


__all__ = ["RunReport"]
