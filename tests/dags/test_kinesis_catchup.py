"""The hourly DAG end to end with dag.test(): real Airflow (SQLite), local Spark, local endpoints."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from devkit.iam_policy import allowed, unneeded

from kinesis_batch import LeaseStore
from kinesis_batch.access import arns
from kinesis_batch.access.arns import Where
from kinesis_batch.aws import cloudwatch_client, dynamodb_client
from kinesis_batch.parsers import default_table
from tests.conftest import PROVIDER_EVENTS
from tests.iam import recording, worker
from tests.metrics.test_cloudwatch import sums
from tests.openlineage.support import all_events, events, file_transport
from tests.runs import Intruder, assert_exactly_once, assert_per_key_order, cli, diamond_stream, read_output
from tests.streams import StreamFactory, put, put_kib

AHEAD = timedelta(minutes=1)


@pytest.mark.contract("airflow", why="every shipped DAG parses on this Airflow")
def test_every_dag_loads_without_import_errors(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert "kinesis_catchup" in dagbag.dag_ids


@pytest.mark.contract("airflow", why="the DAG's schedule, runs and teardown as this Airflow reads them")
def test_catchup_dag_is_hourly_single_run_without_catchup_and_releases_as_teardown(dagbag: Any) -> None:
    dag = dagbag.get_dag("kinesis_catchup")
    assert dag.max_active_runs == 1 and dag.catchup is False
    release = dag.get_task("release_leases")
    assert release.is_teardown
    assert {t.task_id for t in dag.tasks} >= {
        "list_shards",
        "acquire_leases",
        "run_spark_job",
        "publish",
        "commit_checkpoints",
        "release_leases",
    }


@pytest.mark.contract("airflow", why="the catch-up DAG run with dag.test() on this Airflow")
def test_two_dag_runs_read_every_record_once_the_second_only_new_data(
    dagbag: Any, spark: Any, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 100)
    output = tmp_path / "out"
    dag = dagbag.get_dag("kinesis_catchup")
    conf = {"stream": name, "output": str(output)}

    # The read bound is the data interval end. kinesalite stamps records of child shards up to a
    # few hundred ms in the future, so each run's interval ends a minute ahead of the puts.
    first = dag.test(logical_date=datetime.now(UTC) + AHEAD, run_conf=conf)
    assert first.state == "success", [(ti.task_id, ti.state) for ti in first.get_task_instances()]
    assert_exactly_once(read_output(output), sent)

    more = put(kinesis, name, 50, start=len(sent))
    second = dag.test(logical_date=datetime.now(UTC) + 2 * AHEAD, run_conf=conf)
    assert second.state == "success", [(ti.task_id, ti.state) for ti in second.get_task_instances()]
    rows = read_output(output)
    assert_exactly_once(rows, sent + more)
    assert_per_key_order(rows)
    leases = LeaseStore(dynamodb_client(), default_table(name)).list_leases()
    assert all(lease.lease_owner is None and lease.pending_batch_id is None for lease in leases)


@pytest.mark.contract("airflow", why="every call of the catch-up DAG's tasks on this Airflow")
def test_the_catch_up_dags_tasks_call_only_what_the_printed_worker_policy_allows(
    dagbag: Any, spark: Any, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 6)
    conf = {"stream": name, "output": str(tmp_path / "out")}
    where = Where("123456789012", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))  # the local stack's

    printed = cli("iam-policy", "--stream", name, "--output", conf["output"], "--account", where.account,
                  "--region", where.region, "--for", "worker")  # fmt: skip
    document = json.loads(printed.stdout)
    principal = f"arn:aws:sts::{where.account}:assumed-role/mwaa-execution/airflow"

    # Every call held to the document as it is made: one it does not allow would fail its task.
    with recording(worker(principal, document, where, arns.stream(name, where))) as recorder:
        run = dagbag.get_dag("kinesis_catchup").test(logical_date=datetime.now(UTC) + AHEAD, run_conf=conf)

    assert run.state == "success", [(ti.task_id, ti.state) for ti in run.get_task_instances()]
    requests = set(recorder.requests(where, stream=arns.stream(name, where)))
    assert {r.action for r in requests} >= {"kinesis:ListShards", "dynamodb:UpdateItem"}, requests
    assert [r for r in requests if not allowed(document, r)] == []
    assert unneeded(document, requests) == []


@pytest.mark.contract("airflow", why="a teardown that runs after a failed task on this Airflow")
def test_a_failing_spark_step_still_releases_the_leases_and_the_next_run_recovers(
    dagbag: Any, spark: Any, kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: Any, airflow_home: Path
) -> None:
    """Each DAG run is an OpenLineage run too (START, then FAIL with the step's line, or
    COMPLETE), a child of the task that started it under the DAG run, as Airflow's own
    OpenLineage provider names them in its events; and sends its metrics once its batch is
    committed."""
    from kinesis_batch import InvalidStateError
    from kinesis_batch.spark import job

    lineage = tmp_path / "lineage.jsonl"
    for key, value in file_transport(lineage).items():
        monkeypatch.setenv(key, value)
    name = streams.create(shards=2)
    sent = put(kinesis, name, 200)
    output = tmp_path / "out"
    dag = dagbag.get_dag("kinesis_catchup")
    conf = {"stream": name, "output": str(output), "metrics": "cloudwatch", "metrics_namespace": "KinesisBatchDag"}

    def spark_fails(*_: Any) -> None:
        raise InvalidStateError("injected failure of the Spark job")

    original = job.ReadJob.run
    monkeypatch.setattr(job.ReadJob, "run", spark_fails)
    with provider_lineage(dag):
        failed = dag.test(logical_date=datetime.now(UTC) + AHEAD, run_conf=conf)
    states = {ti.task_id: ti.state for ti in failed.get_task_instances()}
    assert failed.state == "failed"
    assert states["run_spark_job"] == "failed" and states["release_leases"] == "success", states
    leases = LeaseStore(dynamodb_client(), default_table(name)).list_leases()
    assert leases and all(lease.lease_owner is None and lease.pending_batch_id is None for lease in leases)
    assert read_output(output) == {}

    monkeypatch.setattr(job.ReadJob, "run", original)
    with provider_lineage(dag):
        recovered = dag.test(logical_date=datetime.now(UTC) + 2 * AHEAD, run_conf=conf)
    assert recovered.state == "success"
    assert_exactly_once(read_output(output), sent)
    start, fail, again, complete = events(lineage)
    assert [e["eventType"] for e in (start, fail, again, complete)] == ["START", "FAIL", "START", "COMPLETE"]
    assert fail["run"]["runId"] == start["run"]["runId"] != again["run"]["runId"] == complete["run"]["runId"]
    said = fail["run"]["facets"]["errorMessage"]["message"]
    assert said == "injected failure of the Spark job; nothing was published"
    assert complete["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == len(sent)
    provided = all_events(airflow_home / PROVIDER_EVENTS)  # the provider's, of every DAG run of the session
    for ours, dag_run in ((start, failed), (fail, failed), (again, recovered), (complete, recovered)):
        theirs = provider_tasks(provided, dag_run.run_id)
        assert {"kinesis_catchup.acquire_leases", "kinesis_catchup.run_spark_job"} <= set(theirs)
        task = theirs["kinesis_catchup.acquire_leases"]
        parent = ours["run"]["facets"]["parent"]  # the task that started the run, for all its events
        assert (parent["job"]["name"], parent["run"]["runId"]) == (task["job"]["name"], task["run"]["runId"])
        # the DAG run, as the provider names it as its task's parent (its own event comes later)
        dag = task["run"]["facets"]["parent"]
        assert (parent["root"]["job"], parent["root"]["run"]["runId"]) == (dag["job"], dag["run"]["runId"])
        assert ours["job"]["facets"]["sourceCodeLocation"]["url"].endswith("/dags/kinesis_catchup.py")
    # and its metrics, sent by commit_checkpoints (the failed run published nothing: none)
    figures = sums(cloudwatch_client(), "KinesisBatchDag", ["RecordsProcessed", "RowsWritten"], name)
    assert figures == {"RecordsProcessed": len(sent), "RowsWritten": len(sent)}


def test_a_read_that_outlives_its_lease_twice_keeps_it_and_no_other_worker_gets_it(
    dagbag: Any, spark: Any, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    # One shard of 20 KiB read at 1 KiB/s: the read step takes about 20 s, its lease lasts 10 s
    # unrenewed (the shortest the DAG accepts), and another worker tries to take it all along.
    name = streams.create(shards=1)
    sent = put_kib(kinesis, name, 20)
    output = tmp_path / "out"
    conf = {"stream": name, "output": str(output), "lease_seconds": 10, "read_limits": "5,1024"}

    with Intruder(name) as intruder:
        dag_run = dagbag.get_dag("kinesis_catchup").test(logical_date=datetime.now(UTC) + AHEAD, run_conf=conf)

    read = next(ti for ti in dag_run.get_task_instances() if ti.task_id == "run_spark_job")
    assert dag_run.state == "success", [(ti.task_id, ti.state) for ti in dag_run.get_task_instances()]
    assert (read.end_date - read.start_date).total_seconds() > 18, "the read must outlive the lease twice"
    assert intruder.tries_after_expiry >= 10, "the other worker tried while the lease would have lapsed"
    assert intruder.taken == []
    assert_exactly_once(read_output(output), sent)


@pytest.mark.contract("airflow", why="this Airflow's on_kill of a running task")
def test_a_task_killed_mid_read_stops_through_on_kill_and_leaves_no_lease_held(
    dagbag: Any, spark: Any, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    """Airflow stops a task (marked failed, timed out, its worker stopping) with SIGTERM to the
    task's process, whose handler calls the operator's ``on_kill``: here, from inside a Spark task
    in the middle of its read, to this process, which runs the dag.test() task."""
    import os

    from kinesis_batch import events
    from tests.faultpoints import FaultAt, forget_signals

    name = streams.create(shards=2)
    sent = put(kinesis, name, 100)
    output = tmp_path / "out"
    dag = dagbag.get_dag("kinesis_catchup")
    conf = {"stream": name, "output": str(output)}
    forget_signals(os.getpid())
    try:
        with events.observing(FaultAt("sigterm", "reading", pid=os.getpid()), in_tasks=True):
            killed = dag.test(logical_date=datetime.now(UTC) + AHEAD, run_conf=conf)
    finally:
        forget_signals(os.getpid())
    states = {ti.task_id: ti.state for ti in killed.get_task_instances()}
    assert states["run_spark_job"] == "failed" and states["publish"] == "upstream_failed", states
    leases = LeaseStore(dynamodb_client(), default_table(name)).list_leases()
    assert [lease.lease_key for lease in leases if lease.lease_owner or lease.pending_batch_id] == []
    assert read_output(output) == {}, "a killed read published"

    again = dag.test(logical_date=datetime.now(UTC) + 2 * AHEAD, run_conf=conf)
    assert again.state == "success", [(ti.task_id, ti.state) for ti in again.get_task_instances()]
    assert_exactly_once(read_output(output), sent)


@contextmanager
def provider_lineage(dag: Any) -> Iterator[None]:
    """Airflow's OpenLineage provider sends its events of ``dag`` in the block (the tests' Airflow
    has it selectively enabled: tests.conftest.airflow_home)."""
    from airflow.providers.openlineage.utils.selective_enable import disable_lineage, enable_lineage

    enable_lineage(dag)
    try:
        yield
    finally:
        disable_lineage(dag)


def provider_tasks(provided: list[dict[str, Any]], run_id: str) -> dict[str, dict[str, Any]]:
    """Job name (``DAG.TASK``) -> the START of each task try of DAG run ``run_id`` the Airflow
    provider sent (its ``airflow`` facet names the DAG run)."""
    return {
        event["job"]["name"]: event
        for event in provided
        if event["eventType"] == "START"
        and event["run"]["facets"].get("airflow", {}).get("dagRun", {}).get("run_id") == run_id
    }
