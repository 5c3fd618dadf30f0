"""A group's Dagster job on the local stack, executed in process as Dagster users test: every
stream of the group in one run, each still its own asset (a materialization for each stream that
ran, an observation with its line for one that failed), the op failing with the failed stream's
line while the others land exactly once; with a resource that starts EMR Serverless job runs,
the group's streams read in one job run; a group that names a stream without an entry fails the
file in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from kinesis_batch.dagster import definitions_from_file
from kinesis_batch.dagster.resources import SparkResource
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.parsers import default_table
from tests.groups import small_group
from tests.output.support import make_bucket, read_rows, sink_of
from tests.runs import assert_exactly_once
from tests.serverless.standin import ROLE, StandIn
from tests.streams import StreamFactory, put


@pytest.mark.contract("dagster", why="the group's job on this Dagster")
def test_a_groups_job_materializes_each_stream_that_ran_and_fails_naming_the_one_that_did_not(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    group = small_group(kinesis, streams, tmp_path)
    plain, table, broken = group.streams
    defs = definitions_from_file(group.path)
    job = defs.resolve_job_def("kinesis_batch_group_small_catch_up")
    assert defs.resolve_schedule_def("kinesis_batch_group_small_schedule").cron_schedule == "@hourly"

    with dg.instance_for_test() as instance:
        result = job.execute_in_process(instance=instance, raise_on_error=False)

        assert not result.success
        (failure,) = [event for event in result.all_events if event.is_step_failure]
        said = failure.step_failure_data.user_failure_data.description
        assert said.startswith("group small: 2 of 3 streams ran") and f"{broken}: --output " in said, said
        for name in (plain, table):
            records = instance.fetch_materializations(dg.AssetKey(["kinesis_batch", name]), limit=5).records
            (materialized,) = [r.asset_materialization for r in records]
            assert materialized is not None and materialized.metadata["dagster/row_count"].value == len(
                group.sent[name]
            )
        observed = instance.fetch_observations(dg.AssetKey(["kinesis_batch", broken]), limit=5).records
        (observation,) = [r.asset_observation for r in observed]
        assert observation is not None and "holds a Delta table" in observation.metadata["error"].value
        assert observation.metadata["exit_code"].value == 2
    group.assert_landed_exactly_once()


def test_a_group_of_a_stream_without_an_entry_fails_the_file_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "streams.toml"
    path.write_text('[[streams]]\nstream = "a"\noutput = "/a"\n\n[[groups]]\nname = "g"\nstreams = ["a", "b"]\n')
    with pytest.raises(IllegalArgumentError, match=r"streams.toml: group 'g': 'b' has no \[\[streams\]\] entry"):
        definitions_from_file(path)


@pytest.mark.timeout(600)
def test_a_groups_job_with_an_emr_serverless_resource_reads_every_stream_in_one_job_run(
    emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    names = [streams.create(shards=1) for _ in range(2)]
    sent = {name: put(kinesis, name, 15) for name in names}
    outputs = {name: f"s3://{make_bucket()}/tables/{name}" for name in names}
    path = tmp_path / "streams.toml"
    entry = '[[streams]]\nstream = "{}"\noutput = "{}"\nformat = "delta"\nread_limits = "none"\n\n'
    group = f'[[groups]]\nname = "jobs"\nstreams = ["{names[0]}", "{names[1]}"]\n'
    path.write_text("".join(entry.format(name, outputs[name]) for name in names) + group)
    application = emr_serverless.application()
    spark = SparkResource(
        emr_serverless_application=application, execution_role=ROLE, environment=emr_serverless.environment()
    )
    job = definitions_from_file(path).resolve_job_def("kinesis_batch_group_jobs_catch_up")

    with dg.instance_for_test() as instance:
        result = job.execute_in_process(instance=instance, resources={"kinesis_batch_spark": spark})
        materialized = {
            name: instance.fetch_materializations(dg.AssetKey(["kinesis_batch", name]), limit=1).records[0]
            for name in names
        }

    assert result.success
    (one,) = emr_serverless.job_runs(application)  # the group's one job run
    assert one["state"] == "SUCCESS"
    for name in names:
        record = materialized[name].asset_materialization
        assert record is not None and record.metadata["emr_serverless_job_run"].value == one["jobRunId"]
        rows = read_rows(
            sink_of(("--format", "delta", "--output", outputs[name]), app=default_table(name), stream=name)
        )
        assert_exactly_once(rows, sent[name])
