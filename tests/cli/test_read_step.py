"""The read step's entry point (kinesis_batch/cli/read_step.py), in this process: whatever it
fails with, its result says, for its orchestrator's one line."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kinesis_batch.config import RunConfig
from kinesis_batch.serverless.attempt import JobResult
from kinesis_batch.spark.cluster import RESULT, read_step_spec
from kinesis_batch.storage.place import Place


def test_a_run_the_step_cannot_make_ends_with_its_line_in_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kinesis_batch.cli import read_step

    # A job run's environment knows no catalog of the orchestrator's name: the run is never made,
    # so its Spark session is never used; the step only stops it, as its last act.
    stopped: list[bool] = []
    session = SimpleNamespace(session=SimpleNamespace(stop=lambda: stopped.append(True)))
    monkeypatch.setattr("kinesis_batch.spark.engine.spark_submitted", lambda: session)
    config = RunConfig.of(stream="s", output="lake.t", format="iceberg", catalog="orchestrators")
    spec = read_step_spec(config, "run-1", tmp_path)

    code = read_step.main([str(spec)])

    result = JobResult.read(Place(str(tmp_path / RESULT)))
    assert code == 2 and result.exit_code == 2 and stopped == [True]
    assert "--catalog orchestrators: no such pyiceberg catalog" in result.error, result
    assert result.kind == "IllegalArgumentError"
