"""The DAGs' output params and Asset: a dag.test() run into a Delta table on S3 (moto), with S3
reached only through the Airflow connection; the Asset is the configured output; bad output
params fail the run without retries; a backfill derives a table of its own."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import s3_settings
from kinesis_batch.output import Output, open_sink
from kinesis_batch.parsers import default_table
from tests.conftest import DAGS
from tests.dags.test_kinesis_catchup import AHEAD
from tests.output.support import make_bucket, read_rows
from tests.runs import assert_exactly_once
from tests.streams import StreamFactory, put


def configured_dagbag(monkeypatch: pytest.MonkeyPatch, **settings: str) -> Any:
    """The dags/ folder parsed again with ``[kinesis_batch]`` settings (as the DAG processor would)."""
    from airflow.dag_processing.dagbag import DagBag

    for key, value in settings.items():
        monkeypatch.setenv(f"AIRFLOW__KINESIS_BATCH__{key.upper()}", value)
    return DagBag(dag_folder=str(DAGS))


def asset_events(run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """(asset URI, extra) of every Asset event the DAG run emitted."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        query = select(AssetModel.uri, AssetEvent.extra).join(AssetModel, AssetEvent.asset_id == AssetModel.id)
        return [(uri, dict(extra)) for uri, extra in session.execute(query.where(AssetEvent.source_run_id == run_id))]


@pytest.mark.contract("airflow", why="an asset event from a DAG run on this Airflow")
def test_a_run_into_a_delta_table_on_s3_is_exactly_once_and_updates_the_tables_asset(
    airflow_home: Path, spark: Any, kinesis: Any, streams: StreamFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=2)
    sent = put(kinesis, name, 120)
    table = f"s3://{make_bucket()}/tables/clicks"
    dag = configured_dagbag(monkeypatch, format="delta", output=table).get_dag("kinesis_catchup")
    assert [outlet.uri for outlet in dag.get_task("publish").outlets] == [table]

    with monkeypatch.context() as only_the_connection:
        # pyarrow and deltalake must get moto's address from the aws_default connection's
        # service_config.s3, not from the environment.
        only_the_connection.delenv("AWS_ENDPOINT_URL_S3")
        run = dag.test(
            logical_date=datetime.now(UTC) + AHEAD, run_conf={"stream": name, "format": "delta", "output": table}
        )

    assert run.state == "success", [(ti.task_id, ti.state) for ti in run.get_task_instances()]
    sink = open_sink("delta", table, app=default_table(name), stream=name, s3=s3_settings())
    assert_exactly_once(read_rows(sink), sent)
    record = sink.last_batch()
    assert record is not None and record.records == len(sent)
    assert asset_events(run.run_id) == [
        (
            table,
            {
                "published": True,
                "batch_id": record.batch_id,
                "records": len(sent),
                "format": "delta",
                "output": table,
            },
        )
    ]


@pytest.mark.contract("airflow", why="this Airflow's assets for each format's output")
def test_the_asset_is_the_configured_output_in_each_format(
    airflow_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    default = configured_dagbag(monkeypatch)
    assert default.import_errors == {}
    assert [o.uri for o in default.get_dag("kinesis_catchup").get_task("publish").outlets] == [
        "file:///tmp/kinesis-batch/output"
    ]

    iceberg = configured_dagbag(monkeypatch, format="iceberg", output="lake.clicks", catalog="glue")
    assert iceberg.import_errors == {}
    dag = iceberg.get_dag("kinesis_catchup")
    assert [o.uri for o in dag.get_task("publish").outlets] == ["iceberg://glue/lake.clicks"]
    assert {key: dag.params[key] for key in ("format", "output", "catalog")} == {
        "format": "iceberg",
        "output": "lake.clicks",
        "catalog": "glue",
    }

    delta = configured_dagbag(monkeypatch, format="delta", output=str(tmp_path / "t"), catalog="")
    assert [o.uri for o in delta.get_dag("kinesis_catchup").get_task("publish").outlets] == [f"file://{tmp_path}/t"]

    wrong = configured_dagbag(monkeypatch, format="iceberg", output="/tmp/not-a-table", catalog="")
    errors = "\n".join(wrong.import_errors.values())
    assert "[kinesis_batch] in Airflow's configuration" in errors and "NAMESPACE.TABLE" in errors


def test_an_unknown_format_is_refused_by_the_form(dagbag: Any) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    with pytest.raises(ParamValidationError, match=r"param format: 'csv' is not one of"):
        dagbag.get_dag("kinesis_catchup").test(run_conf={"stream": "s", "format": "csv"})


def test_an_output_its_format_cannot_write_fails_the_run_without_retries(
    dagbag: Any, kinesis: Any, streams: StreamFactory
) -> None:
    name = streams.create(shards=1)
    run = dagbag.get_dag("kinesis_catchup").test(
        logical_date=datetime.now(UTC) + AHEAD,
        run_conf={"stream": name, "format": "parquet", "output": "s3://bucket/tables/clicks"},
    )
    states = {ti.task_id: (ti.state, ti.try_number) for ti in run.get_task_instances()}
    assert run.state == "failed"
    assert states["list_shards"] == ("failed", 1), states


def test_the_backfill_task_writes_to_the_derived_table_unless_one_is_named(airflow_home: Path, tmp_path: Path) -> None:
    from kinesis_batch.airflow.tasks import backfill_run, run_ids

    main = Output("parquet", str(tmp_path / "main"))
    params = {"stream": "clicks", "start": "trim_horizon", "output": "", "format": "parquet", "catalog": ""}
    run = backfill_run(params, dag_id="kinesis_backfill", run_id="manual__2026-11-22T03:00:00", main=main)
    backfill_id = run_ids("kinesis_backfill", "manual__2026-11-22T03:00:00")[1]
    assert run.output.uri == f"{tmp_path}/main-backfill-{backfill_id}"
    assert run.config.table == f"kinesis-batch-clicks-backfill-{backfill_id}"

    named = backfill_run(
        params | {"output": str(tmp_path / "mine")}, dag_id="kinesis_backfill", run_id="manual__x", main=main
    )
    assert named.output.uri == str(tmp_path / "mine")


def test_without_a_configured_stream_the_dag_has_no_schedule_and_says_so(
    airflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIRFLOW__KINESIS_BATCH__STREAM", raising=False)
    dag = configured_dagbag(monkeypatch).get_dag("kinesis_catchup")
    assert dag.timetable.can_be_scheduled is False
    assert (dag.doc_md or "").startswith("**No stream is configured**")
    assert dag.params.get_param("stream").has_value is False, "the form asks for a stream; none is invented"

    configured = configured_dagbag(monkeypatch, stream="clicks").get_dag("kinesis_catchup")
    assert configured.timetable.can_be_scheduled and configured.params["stream"] == "clicks"
    assert "No stream is configured" not in (configured.doc_md or "")
