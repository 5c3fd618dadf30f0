"""The read step's spec: what spark-submit's and a job run's read step are given, one form."""

from __future__ import annotations

from kinesis_batch.read_spec import ReadStepSpec


def test_a_submitted_read_steps_spec_has_no_attempt_and_a_job_runs_names_where_its_result_goes() -> None:
    submitted = ReadStepSpec({"stream": "s"}, "run-1")
    assert ReadStepSpec.from_json(submitted.to_json()) == submitted and "attempt" not in submitted.to_json()
    job_run = ReadStepSpec({"stream": "s"}, "run-1", "a-2", {"uri": "s3://b/staging/a-2/result.json"})
    assert ReadStepSpec.from_json(job_run.to_json()) == job_run
