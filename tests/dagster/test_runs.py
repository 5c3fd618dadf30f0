"""The stream's asset, backfill job, checks and failure sensor on the local stack (kinesalite,
moto's DynamoDB, the session's local Spark), materialized in process as Dagster users test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from kinesis_batch import LeaseStore
from kinesis_batch.config import default_table
from kinesis_batch.dagster import AwsClients, build_stream_defs
from kinesis_batch.dagster.runs import CATCH_UP, StreamSettings, catch_up_run, run_ids
from kinesis_batch.errors import ThrottledError
from kinesis_batch.orchestration import Output
from kinesis_batch.spark import job as spark_job
from tests.runs import assert_exactly_once, diamond_stream, read_output
from tests.streams import StreamFactory, put


def defs_for(name: str, output: Path) -> dg.Definitions:
    return build_stream_defs(name, output=str(output), lag_threshold_seconds=3600)


def catch_up(defs: dg.Definitions, name: str, instance: dg.DagsterInstance, **options: Any) -> dg.ExecuteInJobResult:
    job = defs.resolve_job_def(f"kinesis_batch_{name.replace('-', '_')}_catch_up")
    return job.execute_in_process(instance=instance, **options)


def owners(dynamodb: Any, name: str, table: str = "") -> dict[str, str | None]:
    return {
        lease.lease_key: lease.lease_owner for lease in LeaseStore(dynamodb, table or default_table(name)).list_leases()
    }


def pending(dynamodb: Any, name: str) -> dict[str, str | None]:
    return {
        lease.lease_key: lease.pending_batch_id for lease in LeaseStore(dynamodb, default_table(name)).list_leases()
    }


def test_two_materializations_are_exactly_once_and_the_second_reads_only_new_data(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark_session: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 40)
    defs = defs_for(name, tmp_path / "out")
    with dg.instance_for_test() as instance:
        first = catch_up(defs, name, instance)
        more = put(kinesis, name, 30, start=len(sent))
        second = catch_up(defs, name, instance)

        assert first.success and second.success
        assert_exactly_once(read_output(tmp_path / "out"), sent + more)
        key = dg.AssetKey(["kinesis_batch", name])
        events = instance.fetch_materializations(key, limit=10).records
        counts = sorted(e.asset_materialization.metadata["dagster/row_count"].value for e in events)  # type: ignore[union-attr]
        assert counts == [len(more), len(sent)]
        latest = events[0].asset_materialization
        assert latest is not None
        shards = latest.metadata["shards"].value.records  # type: ignore[attr-defined]
        assert sum(row.data["records"] for row in shards) == len(more)
        assert {"batch_id", "output", "timings"} <= set(latest.metadata)
        # Its checks ran after it, on the same job: caught up, nothing at risk, the output agrees.
        checks = {e.check_name: e.passed for e in second.get_asset_check_evaluations()}
        assert checks == {"lag": True, "retention": True, "output_agrees": True}
    assert set(owners(dynamodb, name).values()) == {None}, "a lease left held"


def test_a_run_that_fails_in_the_read_releases_every_lease_with_the_librarys_message(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark_session: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    put(kinesis, name, 20)

    def throttled(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise ThrottledError(f"GetRecords on {name}: rate exceeded (gave up after 12 tries)")

    monkeypatch.setattr(spark_job.ReadJob, "run", throttled)
    with dg.instance_for_test() as instance:
        result = catch_up(defs_for(name, tmp_path / "out"), name, instance, raise_on_error=False)

    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "rate exceeded (gave up after 12 tries)" in str(failure.step_failure_data.error)  # type: ignore[union-attr]
    assert owners(dynamodb, name) and set(owners(dynamodb, name).values()) == {None}
    assert set(pending(dynamodb, name).values()) == {None}
    assert read_output(tmp_path / "out") == {}


def test_a_backfill_from_a_history_checkpoint_writes_its_own_output_and_leaves_the_main_checkpoints(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark_session: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    first = put(kinesis, name, 30)
    defs = defs_for(name, tmp_path / "main")
    with dg.instance_for_test() as instance:
        assert catch_up(defs, name, instance).success
        second = put(kinesis, name, 20, start=len(first))
        assert catch_up(defs, name, instance).success
        main_checkpoints = {
            lease.lease_key: lease.checkpoint for lease in LeaseStore(dynamodb, default_table(name)).list_leases()
        }
        runs = sorted({lease.last_run_id for lease in LeaseStore(dynamodb, default_table(name)).list_leases()})
        second_batch = runs[-1]
        job = defs.resolve_job_def(f"kinesis_batch_{name.replace('-', '_')}_backfill")
        config = {"start": f"run={second_batch}", "output": str(tmp_path / "backfill")}
        result = job.execute_in_process(
            instance=instance,
            run_config={"ops": {f"kinesis_batch_{name.replace('-', '_')}_backfill_step": {"config": config}}},
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
    job = defs.resolve_job_def(f"kinesis_batch_{name.replace('-', '_')}_backfill")
    config = {"start": "yesterday", "output": str(tmp_path / "backfill")}
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(
            instance=instance,
            run_config={"ops": {f"kinesis_batch_{name.replace('-', '_')}_backfill_step": {"config": config}}},
            raise_on_error=False,
        )

    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "start: 'yesterday' is not trim_horizon" in str(failure.step_failure_data.error)  # type: ignore[union-attr]
    assert [t for t in dynamodb.list_tables()["TableNames"] if name in t] == []
    assert not (tmp_path / "backfill").exists()


def test_the_failure_sensor_releases_the_leases_and_markers_of_a_run_killed_mid_step(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    put(kinesis, name, 10)
    defs = defs_for(name, tmp_path / "out")
    job = defs.resolve_job_def(f"kinesis_batch_{name.replace('-', '_')}_catch_up")
    sensor = defs.resolve_sensor_def(f"kinesis_batch_{name.replace('-', '_')}_release_leases")
    with dg.instance_for_test() as instance:
        killed = instance.create_run_for_job(job_def=job, status=dg.DagsterRunStatus.FAILURE)
        # What the killed step left: its leases taken and marked with its batch (start ran).
        settings = StreamSettings(name, Output("parquet", str(tmp_path / "out")))
        run = catch_up_run(settings, AwsClients(), run_ids(instance, killed, CATCH_UP))
        run.start()
        assert set(owners(dynamodb, name).values()) == {run.config.worker_id}
        assert set(pending(dynamodb, name).values()) == {run.run_id}

        context = dg.build_run_status_sensor_context(
            sensor_name=sensor.name,
            dagster_instance=instance,
            dagster_run=killed,
            dagster_event=_failure_event(killed),
            resources={"kinesis_batch_aws": AwsClients()},
        ).for_run_failure()
        sensor(context)  # type: ignore[call-arg]

    assert set(owners(dynamodb, name).values()) == {None}
    assert set(pending(dynamodb, name).values()) == {None}


def _failure_event(run: dg.DagsterRun) -> dg.DagsterEvent:
    return dg.DagsterEvent(
        event_type_value=dg.DagsterEventType.RUN_FAILURE.value,
        job_name=run.job_name,
        message="the step's process was killed",
    )
