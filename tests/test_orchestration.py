"""What the orchestrators share (kinesis_batch.orchestration): run ids, outputs as assets, and
where a backfill reads to and writes. Pure: tables of cases."""

from __future__ import annotations

import pytest

from kinesis_batch.orchestration import run_ids
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
