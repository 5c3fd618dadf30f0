"""A decoding stream's Dagster asset: a materialization lands typed rows in a Delta table on S3
(moto) and the bad records beside it, its metadata carries the dead letters and the decoded
columns, its OpenLineage events name both outputs with their rows, and the ``dead_letters``
check fails past the stream's threshold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from kinesis_batch.aws import s3_settings
from kinesis_batch.dagster import build_stream_defs
from kinesis_batch.output import open_sink
from kinesis_batch.parsers import default_table
from tests.dagster.test_runs import checks, materialize
from tests.decoding.support import put_payloads
from tests.openlineage.support import events, file_transport
from tests.output.support import make_bucket, read_rows
from tests.streams import StreamFactory


def test_a_decoding_streams_materialization_lands_rows_and_dead_letters_and_checks_their_share(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lineage = tmp_path / "lineage.jsonl"  # and its OpenLineage events, through the client's file transport
    for key, value in file_transport(lineage).items():
        monkeypatch.setenv(key, value)
    name = streams.create(shards=2)
    put_payloads(kinesis, name, [json.dumps({"id": i}).encode() for i in range(30)] + [b"{bad", b"{bad2"])
    table = f"s3://{make_bucket()}/tables/{name}"
    defs = build_stream_defs(
        name, output=table, format="delta", decode="json", dead_letter_threshold=0.05, small_file_mb=0
    )
    with dg.instance_for_test() as instance:
        result = materialize(defs, name, instance)
        assert result.success
        (materialization,) = result.asset_materializations_for_node(f"kinesis_batch__{name.replace('-', '_')}")
        metadata = {key: value.value for key, value in materialization.metadata.items()}
        assert (metadata["records"], metadata["rows"], metadata["dead_letters"]) == (32, 30, 2)
        assert metadata["dagster/row_count"] == 30 and metadata["dead_letter_reasons"] == {"decode: not JSON": 2}
        assert [column.name for column in metadata["dagster/column_schema"].columns] == ["id"]  # the decoded columns
        start, complete = events(lineage)
        assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
        for event in (start, complete):  # a child of the Dagster run that materialized it, itself the root
            parent = event["run"]["facets"]["parent"]
            assert (parent["job"]["namespace"], parent["run"]["runId"]) == ("dagster", result.run_id)
            assert parent["job"]["name"] == result.dagster_run.job_name
            assert parent["root"]["run"]["runId"] == result.run_id
        table_out, dead_out = complete["outputs"]
        assert table_out["outputFacets"]["outputStatistics"]["rowCount"] == 30 and table_out["name"] == f"tables/{name}"
        assert dead_out["outputFacets"]["outputStatistics"]["rowCount"] == 2
        judged = checks(defs, name, instance)
        assert judged == {"lag": True, "retention": True, "output_agrees": True, "files": True, "dead_letters": False}

    app = default_table(name)
    assert sorted(read_rows(open_sink("delta", table, app=app, stream=name, s3=s3_settings()))["id"]) == list(range(30))
    letters = read_rows(open_sink("delta", table + "_dead_letter", app=app, stream=name, s3=s3_settings()))
    assert sorted(letters["data"]) == [b"{bad", b"{bad2"]
