"""A configured stream of DynamoDB changes (``changes = "dynamodb"`` in the streams file): its
DAG (dag.test()) merges them into a Delta table on S3 (moto, reached only through the Airflow
connection) that equals an independent fold of every change, and the runs the Airflow page
shows carry what the changes did."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import s3_settings
from kinesis_batch.output import open_sink
from kinesis_batch.parsers import default_table
from kinesis_batch.status import run_rows
from tests.changes.support import oracle, put_changes, shuffled_history, table_state
from tests.dags.test_kinesis_streams import AHEAD, dagbag_of, states
from tests.output.support import make_bucket, read_rows
from tests.streams import StreamFactory


def test_a_streams_file_entry_of_dynamodb_changes_merges_into_the_oracles_state_and_counts_them(
    airflow_home: Path,
    kinesis: Any,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = streams.create(shards=2)
    history = shuffled_history(20, 3, seed=5)  # reordered, duplicated, deleted, expired by TTL
    put_changes(kinesis, name, history)
    table = f"s3://{make_bucket()}/tables/items"
    streams_file = tmp_path / "streams.toml"
    streams_file.write_text(
        f'[[streams]]\nstream = "{name}"\noutput = "{table}"\nformat = "delta"\nchanges = "dynamodb"\n'
    )
    dag = dagbag_of(streams_file, monkeypatch).get_dag(f"kinesis_catchup__{name}")
    assert dag.params["changes"] == "dynamodb"

    with monkeypatch.context() as only_the_connection:
        only_the_connection.delenv("AWS_ENDPOINT_URL_S3")  # S3 through the aws_default connection only
        run = dag.test(logical_date=datetime.now(UTC) + AHEAD)
    assert run.state == "success", states(run)

    sink = open_sink("delta", table, app=default_table(name), stream=name, s3=s3_settings())
    assert table_state(read_rows(sink)) == oracle(history)
    (shown,) = run_rows(kinesis, dynamodb, name, default_table(name))  # the page's /runs
    counts = shown["changes"]
    assert sum(counts.values()) == len(history), counts  # each change counted once, as what it did
    deleted = {change.key for change in history if change.row is None}
    assert (counts["inserted"], counts["deleted"] + counts["expired"]) == (len(oracle(history)), len(deleted)), counts
    assert counts["duplicates"] >= 1 and counts["expired"] >= 1, counts
