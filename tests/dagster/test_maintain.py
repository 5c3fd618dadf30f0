"""A stream's maintenance in Dagster: the ``files`` check warns while the output is made of small
files, the ``_maintain`` job compacts it (in process, as Dagster users test), and the check
passes again; the job's daily schedule is there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from kinesis_batch.dagster import build_stream_defs
from tests.dagster.test_runs import materialize, prefix
from tests.runs import assert_exactly_once
from tests.streams import StreamFactory, put

pytestmark = pytest.mark.contract("dagster", why="a files check and the maintenance job on this Dagster")


def test_the_files_check_warns_until_the_maintenance_job_compacts_the_table(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    table = tmp_path / "table"
    defs = build_stream_defs(name, output=str(table), format="delta", retain_hours=0)
    sent = put(kinesis, name, 40)
    with dg.instance_for_test() as instance:
        assert materialize(defs, name, instance).success
        more = put(kinesis, name, 20, start=len(sent))
        assert materialize(defs, name, instance).success
        before = files_check(defs, name, instance)
        assert not before.passed and before.severity == dg.AssetCheckSeverity.WARN
        assert "run kinesis-batch maintain" in str(before.metadata["message"].value)

        result = defs.resolve_job_def(f"{prefix(name)}_maintain").execute_in_process(instance=instance)

        assert result.success
        (reports,) = result.output_for_node(f"{prefix(name)}_maintain_step").values()
        assert reports["after"]["files"] == 1
        assert files_check(defs, name, instance).passed
        assert materialize(defs, name, instance).success  # and the runs go on
    from deltalake import DeltaTable

    assert_exactly_once(DeltaTable(str(table)).to_pyarrow_table().to_pydict(), sent + more)
    schedule = defs.resolve_schedule_def(f"{prefix(name)}_maintain_daily")
    assert (schedule.cron_schedule, schedule.job_name) == ("30 3 * * *", f"{prefix(name)}_maintain")


def files_check(defs: dg.Definitions, name: str, instance: dg.DagsterInstance) -> Any:
    result = defs.resolve_job_def(f"{prefix(name)}_checks").execute_in_process(instance=instance)
    (evaluation,) = [e for e in result.get_asset_check_evaluations() if e.check_name == "files"]
    return evaluation
