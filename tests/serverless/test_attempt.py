"""One attempt's files in the batch's staging: what the job reads, what it leaves, and the job
run that read, kept for the publish step."""

from __future__ import annotations

import json
from pathlib import Path

from kinesis_batch.environment import READ_STEP
from kinesis_batch.serverless.attempt import Attempt, JobResult, members_beside, record_job_run, recorded_job_run
from kinesis_batch.serverless.job import JobRunInfo
from kinesis_batch.serverless.naming import JobName
from kinesis_batch.storage.place import Place


def test_each_attempt_has_its_own_folder_with_the_entry_point_and_the_spec(tmp_path: Path) -> None:
    staging = Place(str(tmp_path / "_kinesis_batch" / "run-1"))
    first, second = Attempt.new(staging), Attempt.new(staging)
    assert first.id != second.id and first.place != second.place
    first.write_inputs({"settings": {"stream": "s"}}, "run-1")
    assert Path(first.entry_point).read_text() == READ_STEP.read_text()
    spec = json.loads(Path(first.spec).read_text())
    assert spec["run_id"] == "run-1" and spec["attempt"] == first.id
    assert Place.from_json(spec["result"]).uri == first.place.child("result.json").uri


def test_a_result_is_this_attempts_only_once_the_job_wrote_it(tmp_path: Path) -> None:
    staging = Place(str(tmp_path / "staging"))
    attempt = Attempt.new(staging)
    assert attempt.result() is None
    written = JobResult(
        attempt.id, 3, "lost the leases of shard-1 to w2 while reading; nothing was published", 2, 1, 7.25
    )
    written.write(attempt.place.child("result.json"))
    assert attempt.result() == written
    assert Attempt.new(staging).result() is None  # another attempt of the same batch sees none


def test_the_job_run_that_read_is_kept_for_the_publish_step(tmp_path: Path) -> None:
    staging = Place(str(tmp_path / "staging"))
    assert recorded_job_run(staging) is None
    info = JobRunInfo("00app", "00job", "arn:job", "SUCCESS", vcpu_hours=0.5, memory_gb_hours=2, seconds=61)
    record_job_run(staging, info)
    assert recorded_job_run(staging) == info
    assert info.cost.vcpu_hours == 0.5 and info.cost.job_run_id == "00job"


def test_a_result_of_the_version_before_task_seconds_reads_as_none_held() -> None:
    body = {"attempt": "0a", "exit_code": 0, "error": "", "tasks": 2, "failed_task_attempts": 0}
    assert JobResult.from_json(body).task_seconds == 0.0
    assert (
        JobResult.from_json(json.loads(json.dumps(JobResult("0a", 0, task_seconds=1.5).to_json()))).task_seconds == 1.5
    )
    assert JobResult.from_json(body).kind == ""
    carried = JobResult("0a", 2, "access denied: …", kind="AccessDeniedError")
    assert JobResult.from_json(json.loads(json.dumps(carried.to_json()))) == carried


def test_a_group_job_runs_members_are_read_from_the_first_manifest_left_beside_its_specs(tmp_path: Path) -> None:
    attempts = [Attempt.new(Place(str(tmp_path / table))) for table in ("a", "b", "c")]
    members = [
        JobName(f"kinesis-batch-{n}", f"run-{n}", attempt.id) for n, attempt in zip("abc", attempts, strict=True)
    ]
    specs = [attempt.spec for attempt in attempts]
    assert members_beside(specs, Place(str(tmp_path)).s3) == ()  # before the job run started: none
    for attempt in attempts[1:]:  # the first member's staging is settled: the others still say
        attempt.write_members(members)
    assert members_beside(specs, Place(str(tmp_path)).s3) == tuple(members)
