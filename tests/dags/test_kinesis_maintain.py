"""The maintenance DAGs: ``kinesis_maintain`` compacts a Delta table on S3 (moto) reached only
through the Airflow connection and says what it did; the streams file makes one per stream (with
its dead-letter output when it decodes), on its own schedule."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import s3_settings
from kinesis_batch.output import open_sink
from kinesis_batch.output.datafiles import FileStats
from tests.dags.test_kinesis_catchup import AHEAD
from tests.dags.test_kinesis_catchup_formats import configured_dagbag
from tests.output.support import commit_record, make_bucket, read_rows, stage


@pytest.mark.contract("airflow", why="the maintenance DAG run with dag.test() on this Airflow")
def test_the_maintenance_dag_compacts_the_configured_table_through_the_connection(
    airflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = f"s3://{make_bucket()}/tables/clicks"
    sink = open_sink("delta", table, app="kinesis-batch-clicks", stream="clicks", s3=s3_settings())
    sink.prepare()
    for number in range(3):
        record = commit_record(f"b-{number}")
        sink.publish(record, stage(sink, record))
    rows = read_rows(sink)
    dag = configured_dagbag(monkeypatch, format="delta", output=table, stream="clicks").get_dag("kinesis_maintain")
    assert dag.schedule == "30 3 * * *"

    with monkeypatch.context() as only_the_connection:
        only_the_connection.delenv("AWS_ENDPOINT_URL_S3")  # S3 is the aws_default connection's
        run = dag.test(logical_date=datetime.now(UTC) + AHEAD, run_conf={"small_file_mb": 1})

    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states == {"maintain_output": "success", "maintain_dead_letters": "success", "check_files": "success"}
    report = run.get_task_instance("maintain_output").xcom_pull(task_ids="maintain_output")
    assert (report["before"]["files"], report["after"]["files"]) == (6, 1)
    checked = run.get_task_instance("check_files").xcom_pull(task_ids="check_files")
    assert checked["files"] == 1 and checked["last_maintenance"]["maintenance_id"] == report["maintenance_id"]
    assert sorted(read_rows(sink)["data"]) == sorted(rows["data"])
    assert FileStats.of(sink.data_files()).files == 1


def test_the_streams_file_makes_a_maintenance_dag_per_stream(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    streams = tmp_path / "streams.toml"
    streams.write_text(
        '[[streams]]\nstream = "clicks"\noutput = "/data/clicks"\n'
        '[[streams]]\nstream = "logs"\noutput = "/data/logs"\nformat = "delta"\ndecode = "json"\n'
        'maintain_schedule = "@daily"\nretain_hours = 48\ntarget_file_mb = 256\npartition_by = "hour"\n'
    )
    dagbag: Any = configured_dagbag(monkeypatch, streams_file=str(streams))

    clicks, logs = dagbag.get_dag("kinesis_maintain__clicks"), dagbag.get_dag("kinesis_maintain__logs")
    assert clicks.schedule == "30 3 * * *" and logs.schedule == "@daily"
    assert clicks.params["dead_letter_output"] == "" and logs.params["dead_letter_output"] == "/data/logs_dead_letter"
    assert (logs.params["retain_hours"], logs.params["target_file_mb"]) == (48, 256)
    catch_up = dagbag.get_dag("kinesis_catchup__logs")
    assert (catch_up.params["partition_by"], catch_up.params["target_file_mb"]) == ("hour", 256)


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ('partition_by = "weekly"', "(bad): partition_by 'weekly': use day, hour"),
        ("retain_hours = 1.5", "(bad): retain_hours: 1.5 is not a whole number"),
        ("small_file_mb = -1", "(bad): small_file_mb: -1 is not 0 or more"),
        ("target_file_mb = 0", "(bad): target_file_mb: 0 is not in 1..4096"),
    ],
)
def test_a_bad_layout_or_maintenance_setting_breaks_only_its_entry(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, says: str
) -> None:
    streams = tmp_path / "streams.toml"
    streams.write_text(
        f'[[streams]]\nstream = "bad"\noutput = "/data/bad"\n{setting}\n[[streams]]\nstream = "good"\noutput = "/d"\n'
    )
    dagbag: Any = configured_dagbag(monkeypatch, streams_file=str(streams))
    assert "kinesis_maintain__good" in dagbag.dag_ids and "kinesis_catchup__good" in dagbag.dag_ids
    (error,) = dagbag.import_errors.values()
    assert says in error
