"""The stream's asset, backfill job, checks and failure sensor on the local stack (kinesalite,
moto's DynamoDB, the session's local Spark), materialized in process as Dagster users test;
the run killed with -9 is a process of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from kinesis_batch import LeaseStore
from kinesis_batch.dagster import SparkResource, build_stream_defs
from kinesis_batch.errors import ThrottledError
from kinesis_batch.parsers import default_table
from kinesis_batch.spark import job as spark_job
from tests.output.support import make_bucket, read_rows, sink_of
from tests.runs import REPO, assert_exactly_once, diamond_stream, read_output
from tests.serverless.standin import ROLE, StandIn
from tests.streams import StreamFactory, put


def defs_for(name: str, output: Path, lag_threshold_seconds: float = 3600) -> dg.Definitions:
    """small_file_mb 0: the files check passes whatever the files (tests/dagster/test_maintain.py checks it)."""
    return build_stream_defs(name, output=str(output), lag_threshold_seconds=lag_threshold_seconds, small_file_mb=0)


def prefix(name: str) -> str:
    return f"kinesis_batch_{name.replace('-', '_')}"


def materialize(defs: dg.Definitions, name: str, instance: dg.DagsterInstance, **options: Any) -> Any:
    asset = defs.resolve_assets_def(dg.AssetKey(["kinesis_batch", name]))  # bound to the defs' resources
    return dg.materialize([asset], instance=instance, **options)


def checks(defs: dg.Definitions, name: str, instance: dg.DagsterInstance) -> dict[str, bool]:
    """The checks job on its own, as its 15-minute schedule runs it: check name -> passed."""
    result = defs.resolve_job_def(f"{prefix(name)}_checks").execute_in_process(instance=instance)
    return {evaluation.check_name: evaluation.passed for evaluation in result.get_asset_check_evaluations()}


def owners(dynamodb: Any, name: str) -> dict[str, str | None]:
    return {lease.lease_key: lease.lease_owner for lease in LeaseStore(dynamodb, default_table(name)).list_leases()}


def pending(dynamodb: Any, name: str) -> dict[str, str | None]:
    return {
        lease.lease_key: lease.pending_batch_id for lease in LeaseStore(dynamodb, default_table(name)).list_leases()
    }


ALL_PASS = {"lag": True, "retention": True, "output_agrees": True, "files": True}


@pytest.mark.contract("dagster", why="the asset materialized on this Dagster")
def test_two_materializations_are_exactly_once_and_the_second_reads_only_new_data(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 40)
    defs = defs_for(name, tmp_path / "out")
    with dg.instance_for_test() as instance:
        first = materialize(defs, name, instance)
        more = put(kinesis, name, 30, start=len(sent))
        second = materialize(defs, name, instance)

        assert first.success and second.success
        assert_exactly_once(read_output(tmp_path / "out"), sent + more)
        rows = [
            r.asset_materialization
            for r in instance.fetch_materializations(dg.AssetKey(["kinesis_batch", name]), limit=10).records
        ]
        counts = sorted(m.metadata["dagster/row_count"].value for m in rows if m is not None)
        assert counts == [len(more), len(sent)]
        latest = rows[0]
        assert latest is not None
        shards = latest.metadata["shards"].value.records  # type: ignore[attr-defined]
        assert sum(row.data["records"] for row in shards) == len(more)
        assert {"batch_id", "output", "timings"} <= set(latest.metadata)
        assert checks(defs, name, instance) == ALL_PASS  # caught up, nothing at risk, the output agrees
    assert set(owners(dynamodb, name).values()) == {None}, "a lease left held"


def test_a_materialization_whose_read_is_spark_submitted_is_exactly_once_and_releases_its_leases(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # spark-submit to a local master: the same submit, package zip and --step read as to a
    # cluster (tests/dags/test_kinesis_catchup_on_a_cluster.py has the standalone cluster).
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 20)
    python = {"spark.pyspark.python": sys.executable, "spark.pyspark.driver.python": sys.executable}
    spark = SparkResource(master="local[2]", submit=True, conf={**python, "spark.ui.enabled": "false"})
    defs = build_stream_defs(name, output=str(tmp_path / "out"), spark=spark)
    with dg.instance_for_test() as instance:
        result = materialize(defs, name, instance)
        said = [e.message for e in instance.all_logs(result.run_id) if e.message]

    assert result.success
    assert any("Running Spark version" in line for line in said), "the read ran in a spark-submit of its own"
    assert_exactly_once(read_output(tmp_path / "out"), sent)
    assert set(owners(dynamodb, name).values()) == {None}, "a lease left held"


@pytest.mark.timeout(600)
def test_a_materialization_whose_read_is_an_emr_serverless_job_run_is_exactly_once_with_its_bill_in_the_metadata(
    emr_serverless: StandIn, kinesis: Any, dynamodb: Any, streams: StreamFactory
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 20)
    output = f"s3://{make_bucket()}/tables/{name}"
    application = emr_serverless.application()
    spark = SparkResource(
        emr_serverless_application=application, execution_role=ROLE, environment=emr_serverless.environment()
    )
    defs = build_stream_defs(name, output=output, format="delta", read_limits="none", spark=spark)
    with dg.instance_for_test() as instance:
        result = materialize(defs, name, instance)
        (record,) = instance.fetch_materializations(dg.AssetKey(["kinesis_batch", name]), limit=1).records
        materialization = record.asset_materialization
        assert materialization is not None

    assert result.success
    rows = read_rows(sink_of(("--format", "delta", "--output", output), app=default_table(name), stream=name))
    assert_exactly_once(rows, sent)
    (job,) = emr_serverless.job_runs(application)
    assert job["state"] == "SUCCESS"
    assert materialization.metadata["emr_serverless_job_run"].value == job["jobRunId"]
    assert materialization.metadata["billed_vcpu_hours"].value == job["billedResourceUtilization"]["vCPUHour"]
    assert set(owners(dynamodb, name).values()) == {None}, "a lease left held"


@pytest.mark.contract("dagster", why="this Dagster's asset checks")
def test_the_lag_check_fails_for_a_stream_left_behind_and_the_others_still_pass(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 10)
    defs = defs_for(name, tmp_path / "out", lag_threshold_seconds=1)
    with dg.instance_for_test() as instance:
        assert checks(defs, name, instance) == dict.fromkeys(ALL_PASS, False)  # no run yet: nothing to check
        assert materialize(defs, name, instance).success
        put(kinesis, name, 5, start=10)
        time.sleep(2)  # the unread records are now older than the 1 s threshold

        assert checks(defs, name, instance) == {**ALL_PASS, "lag": False}


def test_a_run_that_fails_in_the_read_releases_every_lease_with_the_librarys_message(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    put(kinesis, name, 20)

    def throttled(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise ThrottledError(f"GetRecords on {name}: rate exceeded (gave up after 12 tries)")

    monkeypatch.setattr(spark_job.ReadJob, "run", throttled)
    with dg.instance_for_test() as instance:
        result = materialize(defs_for(name, tmp_path / "out"), name, instance, raise_on_error=False)

    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "rate exceeded (gave up after 12 tries)" in str(failure.step_failure_data.error)
    assert owners(dynamodb, name) and set(owners(dynamodb, name).values()) == {None}
    assert set(pending(dynamodb, name).values()) == {None}
    assert read_output(tmp_path / "out") == {}


@pytest.mark.contract("dagster", why="this Dagster's termination of a running step")
def test_a_run_terminated_mid_step_stops_cleanly_and_leaves_no_lease_held(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    """Dagster terminates a run by SIGINT to its process (its run cancellation thread's
    ``send_interrupt``): here from inside a Spark task in the middle of the step's read."""
    from kinesis_batch import events
    from tests.faultpoints import FaultAt, forget_signals

    name = streams.create(shards=2)
    sent = put(kinesis, name, 60)
    defs = defs_for(name, tmp_path / "out")
    forget_signals(os.getpid())
    try:
        with (
            dg.instance_for_test() as instance,
            events.observing(FaultAt("sigint", "reading", pid=os.getpid()), in_tasks=True),
        ):
            started = time.monotonic()
            result = materialize(defs, name, instance, raise_on_error=False)
            seconds = time.monotonic() - started
    finally:
        forget_signals(os.getpid())

    assert not result.success and seconds < 60, seconds  # the task sleeps a minute unless cancelled
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "interrupted by SIGINT: batch " in str(failure.step_failure_data.error)
    assert owners(dynamodb, name) and set(owners(dynamodb, name).values()) == {None}
    assert set(pending(dynamodb, name).values()) == {None}
    assert read_output(tmp_path / "out") == {}
    with dg.instance_for_test() as instance:
        assert materialize(defs, name, instance).success
    assert_exactly_once(read_output(tmp_path / "out"), sent)


def test_a_backfill_from_a_history_checkpoint_writes_its_own_output_and_leaves_the_main_checkpoints(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    first = put(kinesis, name, 30)
    defs = defs_for(name, tmp_path / "main")
    with dg.instance_for_test() as instance:
        assert materialize(defs, name, instance).success
        second = put(kinesis, name, 20, start=len(first))
        assert materialize(defs, name, instance).success
        main_checkpoints = {
            lease.lease_key: lease.checkpoint for lease in LeaseStore(dynamodb, default_table(name)).list_leases()
        }
        runs = sorted({lease.last_run_id for lease in LeaseStore(dynamodb, default_table(name)).list_leases()})
        second_batch = runs[-1]
        job = defs.resolve_job_def(f"{prefix(name)}_backfill")
        config = {"start": f"run={second_batch}", "output": str(tmp_path / "backfill")}
        result = job.execute_in_process(
            instance=instance,
            run_config={"ops": {f"{prefix(name)}_backfill_step": {"config": config}}},
        )

    assert result.success
    assert_exactly_once(read_output(tmp_path / "backfill"), second)
    assert_exactly_once(read_output(tmp_path / "main"), first + second)
    after = {lease.lease_key: lease.checkpoint for lease in LeaseStore(dynamodb, default_table(name)).list_leases()}
    assert after == main_checkpoints


def test_a_bad_backfill_start_fails_at_its_first_step_with_one_line_and_creates_nothing(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=1)
    defs = defs_for(name, tmp_path / "main")
    job = defs.resolve_job_def(f"{prefix(name)}_backfill")
    config = {"start": "yesterday", "output": str(tmp_path / "backfill")}
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(
            instance=instance,
            run_config={"ops": {f"{prefix(name)}_backfill_step": {"config": config}}},
            raise_on_error=False,
        )

    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "start: 'yesterday' is not trim_horizon" in str(failure.step_failure_data.error)  # type: ignore[union-attr]
    assert [t for t in dynamodb.list_tables()["TableNames"] if name in t] == []
    assert not (tmp_path / "backfill").exists()


KILLED_RUN = """
import sys
import dagster as dg
from kinesis_batch.dagster import SparkResource, build_stream_defs
from kinesis_batch import events
from tests.faultpoints import FaultAt
events.observe(FaultAt("crash", "published"))
name, output = sys.argv[1:3]
defs = build_stream_defs(name, output=output, lag_threshold_seconds=3600)
job = defs.resolve_job_def("kinesis_batch_" + name.replace("-", "_") + "_catch_up")
job.execute_in_process(instance=dg.DagsterInstance.get())
"""


@pytest.mark.isolated("kill -9")
@pytest.mark.contract("dagster", why="this Dagster's run failure sensor")
def test_a_step_killed_after_publish_is_released_by_the_failure_sensor_and_the_next_run_recovers(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    sent = put(kinesis, name, 40)
    defs = defs_for(name, tmp_path / "out")
    home = tmp_path / "dagster-home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    # The run's step process, killed with -9 (with its Spark) between the output's commit and the
    # checkpoints' (the run's crash point "published"): no finally ran.
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, name, str(tmp_path / "out")],
        env=os.environ, cwd=REPO, capture_output=True, text=True, timeout=300,
        start_new_session=True,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    instance = dg.DagsterInstance.get()
    try:
        (run,) = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.STARTED  # nobody told Dagster
        assert {owner for owner in owners(dynamodb, name).values()} == {f"dagster-catchup-{run_ids_digest(run)}"}
        instance.report_run_failed(run)  # what run monitoring does for a dead run worker
        assert checks(defs, name, instance) == {**ALL_PASS, "output_agrees": False}

        sensor = defs.resolve_sensor_def(f"{prefix(name)}_release_leases")
        failed = instance.get_run_by_id(run.run_id)
        assert failed is not None and failed.status == dg.DagsterRunStatus.FAILURE
        context = dg.build_run_status_sensor_context(
            sensor_name=sensor.name,
            dagster_instance=instance,
            dagster_run=failed,
            dagster_event=dg.DagsterEvent(
                event_type_value=dg.DagsterEventType.RUN_FAILURE.value, job_name=failed.job_name, message="killed"
            ),
            resources=defs.resources,
        ).for_run_failure()
        sensor(context)  # type: ignore[call-arg]
        assert set(owners(dynamodb, name).values()) == {None}, "the sensor left a lease held"

        # The next run rolls the published batch's checkpoints forward and reads nothing twice.
        more = put(kinesis, name, 10, start=len(sent))
        assert materialize(defs, name, instance).success
        assert_exactly_once(read_output(tmp_path / "out"), sent + more)
        assert set(pending(dynamodb, name).values()) == {None}
        assert checks(defs, name, instance) == ALL_PASS
    finally:
        instance.dispose()


def run_ids_digest(run: dg.DagsterRun) -> str:
    from kinesis_batch.orchestration import run_ids

    return run_ids("dagster", "catchup", run.root_run_id or run.run_id)[0].rsplit("-", 1)[-1]
