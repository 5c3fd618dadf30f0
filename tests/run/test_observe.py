"""What a run tells the outside, through the client's own file transport and the stack's
Kinesis: a run ends once (after its COMPLETE, a failure in the same process sends nothing); a
failure before it is FAIL, or ABORT for a stop; the parent its driver names is on every event,
and without a driver the standard variables' parent is; metrics go with the COMPLETE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import cloudwatch_client
from kinesis_batch.errors import ShutdownError
from kinesis_batch.openlineage.origin import Origin, ParentRun, RunRef
from kinesis_batch.run.observe import Observer
from kinesis_batch.shards.listing import describe_stream
from tests.metrics.test_cloudwatch import sums
from tests.openlineage.support import events, file_transport
from tests.output.support import run_config
from tests.streams import StreamFactory

TASK = RunRef("default", "hourly.acquire_leases", "0193a1b2-0000-7000-8000-0000000000a1")
DAG = RunRef("default", "hourly", "0193a1b2-0000-7000-8000-0000000000d0")


def observer(name: str, tmp_path: Path, kinesis: Any, origin: Origin | None = None, **settings: Any) -> Observer:
    config = run_config(name, ("--output", str(tmp_path / "out"), "--format", "parquet"), "w1", **settings)
    return Observer(
        config, "batch-1", arn=lambda: describe_stream(kinesis, name).arn, cloudwatch=cloudwatch_client, origin=origin
    )


def test_a_run_ends_once_and_a_stop_after_its_commit_sends_nothing_more(
    kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "lineage.jsonl"
    for key, value in file_transport(log).items():
        monkeypatch.setenv(key, value)
    name = streams.create(shards=1)
    run = observer(
        name, tmp_path, kinesis, Origin(ParentRun.of(TASK, DAG)), metrics="cloudwatch", metrics_namespace="Observed"
    )
    run.started()
    run.committed(None, {"start": 0.5, "commit": 0.25}, lambda route: None)
    run.failed(ShutdownError("stopped by SIGTERM after its batch was committed"))
    start, complete = events(log)
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    for event in (start, complete):
        parent = event["run"]["facets"]["parent"]
        assert (parent["run"]["runId"], parent["root"]["run"]["runId"]) == (TASK.run_id, DAG.run_id)
    assert sums(cloudwatch_client(), "Observed", ["RecordsProcessed"], name) == {"RecordsProcessed": 0}


@pytest.mark.parametrize(
    ("error", "state"),
    [(ShutdownError("stopped by SIGINT before publishing"), "ABORT"), (OSError("disk full"), "FAIL")],
)
def test_a_failure_before_the_commit_ends_the_run_and_the_standard_variables_name_its_parent(
    error: BaseException,
    state: str,
    kinesis: Any,
    streams: StreamFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "lineage.jsonl"
    for key, value in {**file_transport(log), **ParentRun.of(TASK, DAG).environ()}.items():
        monkeypatch.setenv(key, value)
    run = observer(streams.create(shards=1), tmp_path, kinesis)
    run.started()
    run.failed(error)
    start, end = events(log)
    assert (start["eventType"], end["eventType"]) == ("START", state)
    assert end["run"]["facets"]["errorMessage"]["message"] == str(error)
    assert end["run"]["facets"]["parent"]["job"]["name"] == TASK.name
