"""A configured stream that routes (``route_by``): its DAG (dag.test()) lands each kind of record
in a Delta table of its own on S3 (moto, reached only through the Airflow connection), the
records with no route in the stream's dead-letter table, and its end-of-run check passes; a
later run's new kind makes its table; each run's rows per table are in its history."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import dynamodb_client, s3_settings
from kinesis_batch.output import open_sink
from kinesis_batch.parsers import default_table
from kinesis_batch.status import run_rows
from tests.dags.test_kinesis_streams import AHEAD, dagbag_of, states
from tests.decoding.support import put_payloads
from tests.output.support import make_bucket, read_rows
from tests.streams import StreamFactory


def test_a_routed_streams_dag_lands_each_kind_in_its_own_table_and_the_unroutable_as_dead_letters(
    airflow_home: Path,
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = streams.create(shards=2)
    kinds = ["click", "view", None]
    put_payloads(kinesis, name, [json.dumps({"n": i, "type": kinds[i % 3]}).encode() for i in range(30)])
    root = f"s3://{make_bucket()}/app"
    streams_file = tmp_path / "streams.toml"
    streams_file.write_text(
        f'[[streams]]\nstream = "{name}"\noutput = "{root}/{{route}}"\nformat = "delta"\ndecode = "json"\n'
        'route_by = "type"\ndead_letter_threshold = 0.5\n'
    )
    dag = dagbag_of(streams_file, monkeypatch).get_dag(f"kinesis_catchup__{name}")
    assert dag.params["route_by"] == "type"

    with monkeypatch.context() as only_the_connection:
        only_the_connection.delenv("AWS_ENDPOINT_URL_S3")  # S3 through the aws_default connection only
        first = dag.test(logical_date=datetime.now(UTC) + AHEAD)
        assert first.state == "success", states(first)
        put_payloads(kinesis, name, [json.dumps({"n": 30 + i, "type": "buy"}).encode() for i in range(5)])
        second = dag.test(logical_date=datetime.now(UTC) + 2 * AHEAD)
        assert second.state == "success", states(second)

    def table(route: str) -> dict[str, list[Any]]:
        return read_rows(open_sink("delta", f"{root}/{route}", app=default_table(name), stream=name, s3=s3_settings()))

    assert sorted(table("click")["n"]) == list(range(0, 30, 3))
    assert sorted(table("view")["n"]) == list(range(1, 30, 3))
    assert sorted(table("buy")["n"]) == list(range(30, 35))
    assert sorted(json.loads(d)["n"] for d in table("_dead_letter")["data"]) == list(range(2, 30, 3))
    # What the Airflow page and history --runs show: each run's rows per table.
    runs = run_rows(kinesis, dynamodb_client(), name, default_table(name))
    assert [run.get("tables") for run in runs] == [{"click": 10, "view": 10}, {"buy": 5}]
