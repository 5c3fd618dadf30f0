"""The run configuration of a stream's jobs as the Launchpad shows it: the formats are the
library's, what Dagster's config types can express is refused at launch, the rest is left to
the library's one-line checks when the step starts.

No ``from __future__ import annotations``: Dagster reads the op's annotation at runtime."""

import dagster as dg
import pytest

from kinesis_batch import defaults
from kinesis_batch.dagster.config import BackfillConfig, CatchUpConfig, Format
from kinesis_batch.output.formats import FORMATS

pytestmark = pytest.mark.contract("dagster", why="the launchpad's config as this Dagster types it")


def test_the_launchpad_offers_every_format_there_is() -> None:
    assert [member.value for member in Format] == list(FORMATS)


def test_the_defaults_read_up_to_now_and_backfill_from_the_horizon_into_a_table_of_its_own() -> None:
    run, backfill = CatchUpConfig(), BackfillConfig()
    assert run.read_bound is None and run.allow_gaps is False
    assert backfill.start == defaults.BACKFILL_START and backfill.shards == [] and backfill.output is None
    assert backfill.move_main_checkpoints is False


def test_a_format_that_does_not_exist_is_refused_at_launch() -> None:
    assert BackfillConfig(format="delta").format == Format["delta"]  # type: ignore[arg-type]
    with pytest.raises(Exception, match="orc"):
        BackfillConfig(format="orc")  # type: ignore[arg-type]


def test_a_job_runs_with_the_config_the_launchpad_would_send() -> None:
    seen: list[BackfillConfig] = []

    @dg.op
    def backfill(config: BackfillConfig) -> None:
        seen.append(config)

    @dg.job
    def job() -> None:
        backfill()

    given = {"shards": ["shardId-000000000001"], "start": "run=r-1", "format": "iceberg", "catalog": "glue"}
    assert job.execute_in_process(run_config={"ops": {"backfill": {"config": given}}}).success
    assert seen[0].shards == ["shardId-000000000001"] and seen[0].format == Format["iceberg"]
    with pytest.raises(dg.DagsterInvalidConfigError, match="not in enum type Format got orc"):
        job.execute_in_process(run_config={"ops": {"backfill": {"config": {"format": "orc"}}}})
