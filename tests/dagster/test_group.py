"""A group's Dagster job on the local stack, executed in process as Dagster users test: every
stream of the group in one run, each still its own asset (a materialization for each stream that
ran, an observation with its line for one that failed), the op failing with the failed stream's
line while the others land exactly once; a group that names a stream without an entry fails the
file in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from kinesis_batch.dagster import definitions_from_file
from kinesis_batch.errors import IllegalArgumentError
from tests.groups import small_group
from tests.streams import StreamFactory


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
