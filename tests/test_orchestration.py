"""What the orchestrators share (kinesis_batch.orchestration): run ids, outputs as assets, and
where a backfill reads to and writes. Pure: tables of cases."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.orchestration import backfill_output, plan_backfill, run_ids
from kinesis_batch.output import Output


@pytest.mark.parametrize(
    ("args", "worker_prefix", "batch_prefix"),
    [
        (("airflow", "kinesis_catchup", "scheduled__2026-11-23T10:00:00+00:00", "2026-11-23T10:00:00+00:00"),
         "airflow-kinesis_catchup-", "kinesis_catchup-20261123T100000-"),
        (("dagster", "catchup", "5f0c2d3e-aaaa-bbbb-cccc-0123456789ab", "20261123T105959"),
         "dagster-catchup-", "catchup-20261123T105959-"),
        (("dagster", "backfill", "run-1"), "dagster-backfill-", "backfill-run-"),  # no stamp
    ],
)  # fmt: skip
def test_run_ids_are_stable_per_run_and_name_the_orchestrator_the_job_and_the_time(
    args: tuple[str, ...], worker_prefix: str, batch_prefix: str
) -> None:
    worker, batch = run_ids(*args)

    assert worker.startswith(worker_prefix) and batch.startswith(batch_prefix)
    assert (worker, batch) == run_ids(*args)  # a retry resumes the same run
    other = run_ids(args[0], args[1], args[2] + "-other", *args[3:])
    assert other[0] != worker and other[1] != batch


@pytest.mark.parametrize(
    ("output", "uri"),
    [
        (Output("parquet", "/data/clicks"), "file:///data/clicks"),
        (Output("delta", "s3://lake/tables/clicks/"), "s3://lake/tables/clicks"),
        (Output("iceberg", "lake.clicks"), "iceberg://default/lake.clicks"),
        (Output("iceberg", "lake.clicks", "glue"), "iceberg://glue/lake.clicks"),
    ],
)
def test_an_output_as_an_asset_is_named_by_one_uri(output: Output, uri: str) -> None:
    assert output.asset_uri == uri


@pytest.mark.parametrize(
    ("main", "derived"),
    [
        (Output("parquet", "/data/clicks/"), "/data/clicks-backfill-kinesis_backfill-20261122T0300-ab12"),
        (Output("delta", "s3://b/tables/clicks"), "s3://b/tables/clicks_backfill_kinesis_backfill-20261122T0300-ab12"),
        (Output("iceberg", "lake.clicks", "glue"), "lake.clicks_backfill_kinesis_backfill_20261122t0300_ab12"),
    ],
    ids=["parquet", "delta", "iceberg"],
)
def test_a_backfill_without_an_output_gets_a_table_of_its_own(main: Output, derived: str) -> None:
    output = backfill_output(main, main.format, "kinesis_backfill-20261122T0300-ab12")
    assert output == derived and output != main.output
    Output(main.format, output, main.catalog)  # a name its format accepts


def test_a_backfill_in_another_format_must_name_its_output() -> None:
    with pytest.raises(IllegalArgumentError, match="a delta backfill needs its output named"):
        backfill_output(Output("parquet", "/data/clicks"), "delta", "id")


@pytest.mark.parametrize(
    ("move", "output", "table", "written"),
    [
        (False, "", "kinesis-batch-clicks-backfill-b1", "/data/clicks-backfill-b1"),
        (False, "/data/mine", "kinesis-batch-clicks-backfill-b1", "/data/mine"),
        (True, "", "kinesis-batch-clicks", "/data/clicks-backfill-b1"),
    ],
)
def test_a_backfill_has_a_lease_table_of_its_own_unless_it_moves_the_main_checkpoints(
    move: bool, output: str, table: str, written: str
) -> None:
    until = datetime(2026, 11, 23, tzinfo=UTC)
    backfill = plan_backfill(
        stream="clicks",
        main=Output("parquet", "/data/clicks"),
        backfill_id="b1",
        format="parquet",
        output=output,
        until=until,
        move_main_checkpoints=move,
    )

    assert (backfill.table, backfill.output, backfill.until) == (table, written, until)
    assert backfill.moves_main_checkpoints is move
