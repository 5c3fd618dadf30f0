"""The backfill form offers every setting a catch-up run has, empty by default, and a backfill
reads like the stream's own consumer unless the form changes a setting.

Airflow reads its settings once, when it is first imported: so these tests import it only
after ``airflow_home`` set them up (tests/conftest.py), never at collection."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.output import Output
from kinesis_batch.settings import StreamSettings

MAIN = Output("delta", "/lake/main")
pytestmark = [
    pytest.mark.usefixtures("airflow_home"),
    pytest.mark.contract("airflow", why="the backfill DAG's form as this Airflow validates it"),
]


def test_the_form_offers_every_setting_of_a_catch_up_run_but_the_checks_it_has_no_task_for() -> None:
    from kinesis_batch.airflow.backfill import CHECKS, backfill_params
    from kinesis_batch.airflow.dags import catch_up_params

    backfill = backfill_params(["orders"], MAIN)
    catch_up = catch_up_params({"stream": "orders", "output": "/lake/orders"})
    settings = set(catch_up) - {"allow_gaps", "move_output"}
    assert settings - set(backfill) == set(CHECKS)
    for name in ("changes", "key", "route_by", "routes", "max_new_tables", "decode", "emr_serverless"):
        assert backfill[name].value is None, name  # empty: the stream's own


@pytest.mark.parametrize("name", ["changes", "decode", "max_new_tables", "tombstone_hours", "lease_seconds"])
def test_a_setting_keeps_its_choices_and_bounds_and_may_be_empty(name: str) -> None:
    from kinesis_batch.airflow.backfill import backfill_params
    from kinesis_batch.airflow.dags import catch_up_params

    own = backfill_params([], MAIN)[name].schema
    theirs = catch_up_params({"stream": "s", "output": "/o"})[name].schema
    assert "null" in own["type"]
    for rule in ("minimum", "maximum"):
        assert own.get(rule) == theirs.get(rule), rule
    if "enum" in theirs:
        assert own["enum"] == [None, *theirs["enum"]]


def form(**values: Any) -> dict[str, Any]:
    from kinesis_batch.airflow.backfill import backfill_params

    params = {name: param.value for name, param in backfill_params([], MAIN).items()}
    return {**params, "stream": "orders", **values}


ENTRY = StreamSettings(
    stream="orders", output="s3://lake/orders", format="delta", changes="dynamodb", tombstone_hours=48.0
)


def test_a_stream_of_the_streams_file_is_read_with_its_entrys_settings() -> None:
    from kinesis_batch.airflow.backfill import main_settings

    settings = StreamSettings.from_mapping(main_settings(form(), {"orders": ENTRY}, MAIN))
    assert settings == ENTRY


def test_what_the_form_changes_wins_over_the_entry_and_its_own_fields_stay_the_backfills() -> None:
    from kinesis_batch.airflow.backfill import main_settings

    changed = form(tombstone_hours=2.5, table="main-leases", output="/elsewhere", format="parquet")
    settings = StreamSettings.from_mapping(main_settings(changed, {"orders": ENTRY}, MAIN))
    assert (settings.tombstone_hours, settings.changes, settings.table) == (2.5, "dynamodb", "main-leases")
    assert (settings.format, settings.output) == ("delta", "s3://lake/orders")  # the main consumer's


def test_a_stream_outside_the_file_is_the_main_outputs_with_what_the_form_says() -> None:
    from kinesis_batch.airflow.backfill import main_settings

    changed = form(changes="dynamodb")
    settings = StreamSettings.from_mapping(main_settings(changed, {}, MAIN))
    assert (settings.format, settings.output, settings.changes) == ("delta", "/lake/main", "dynamodb")
    assert settings.change_settings is not None


def test_a_stream_outside_the_file_into_a_named_output_is_checked_on_that_output() -> None:
    from kinesis_batch.airflow.backfill import main_settings

    parquet_main = Output("parquet", "/lake/main")  # could not hold changes; the backfill's table can
    changed = form(changes="dynamodb", format="iceberg", output="analytics.items")
    settings = StreamSettings.from_mapping(main_settings(changed, {}, parquet_main))
    assert (settings.format, settings.output, settings.changes) == ("iceberg", "analytics.items", "dynamodb")
