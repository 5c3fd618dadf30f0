"""A backfill's plan: its lease table, its output and its run configuration, from the main
consumer's (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kinesis_batch.backfill.plan import backfill_output, plan_backfill
from kinesis_batch.config import KEEP, NONE, RunConfig
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.output import Output


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
    main = RunConfig.of(stream="clicks", output="/data/clicks", worker_id="w", decode="json")
    config, backfill = plan_backfill(main, "b1", output=output, until=until, move_main_checkpoints=move)

    assert (backfill.table, backfill.output, backfill.until) == (table, written, until)
    assert backfill.moves_main_checkpoints is move and backfill.main_table == "kinesis-batch-clicks"
    assert (config.table, config.output, config.until, config.worker_id) == (table, written, until, "w")
    assert config.decoding == main.decoding  # the main consumer's settings otherwise
    assert config.output_binding == (NONE if move else KEEP)  # the main table keeps its own output


def test_a_backfill_in_the_main_format_keeps_the_main_catalog_and_another_format_names_its_own() -> None:
    main = RunConfig.of(stream="clicks", output="lake.clicks", format="iceberg", catalog="glue")
    same, _ = plan_backfill(main, "b1")
    assert (same.format, same.catalog, same.output) == ("iceberg", "glue", "lake.clicks_backfill_b1")
    other, _ = plan_backfill(main, "b1", format="delta", output="/data/again")
    assert (other.format, other.catalog) == ("delta", None)
