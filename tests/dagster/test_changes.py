"""A stream of DynamoDB changes as a Dagster asset: a materialization merges them into a Delta
table on S3 (moto) that equals an independent fold of every change, and its metadata says what
the changes did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from kinesis_batch.aws import s3_settings
from kinesis_batch.dagster import build_stream_defs
from kinesis_batch.output import open_sink
from kinesis_batch.parsers import default_table
from tests.changes.support import oracle, put_changes, shuffled_history, table_state
from tests.dagster.test_runs import materialize
from tests.output.support import make_bucket, read_rows
from tests.streams import StreamFactory


def test_a_changes_streams_materialization_leaves_the_oracles_state_and_counts_the_changes(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    history = shuffled_history(20, 3, seed=9)
    put_changes(kinesis, name, history)
    table = f"s3://{make_bucket()}/tables/{name}"
    defs = build_stream_defs(name, output=table, format="delta", changes="dynamodb", small_file_mb=0)
    with dg.instance_for_test() as instance:
        result = materialize(defs, name, instance)
        assert result.success
        (materialization,) = result.asset_materializations_for_node(f"kinesis_batch__{name.replace('-', '_')}")
        metadata = {key: value.value for key, value in materialization.metadata.items()}

    sink = open_sink("delta", table, app=default_table(name), stream=name, s3=s3_settings())
    assert table_state(read_rows(sink)) == oracle(history)
    counts = metadata["changes"]
    assert sum(counts.values()) == len(history), counts
    deleted = {change.key for change in history if change.row is None}
    assert (counts["inserted"], counts["deleted"] + counts["expired"]) == (len(oracle(history)), len(deleted)), counts
