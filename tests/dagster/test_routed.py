"""A routed stream's Dagster asset (``route_by``): a materialization lands each kind of record in
its own Delta table on S3 (moto) and the unroutable beside them; its metadata gives the rows of
each table, and the stream's checks still judge it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg

from kinesis_batch.aws import s3_settings
from kinesis_batch.dagster import build_stream_defs
from kinesis_batch.output import open_sink
from kinesis_batch.parsers import default_table
from tests.dagster.test_runs import checks, materialize
from tests.decoding.support import put_payloads
from tests.output.support import make_bucket, read_rows
from tests.streams import StreamFactory


def test_a_routed_streams_materialization_lands_each_kind_in_its_table_with_rows_by_table(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    kinds = ["click", "view", "click", None]
    put_payloads(kinesis, name, [json.dumps({"n": i, "type": kinds[i % 4]}).encode() for i in range(40)])
    root = f"s3://{make_bucket()}/app"
    defs = build_stream_defs(
        name, output=f"{root}/{{route}}", format="delta", decode="json", route_by="type", dead_letter_threshold=0.5,
        small_file_mb=0,
    )  # fmt: skip
    with dg.instance_for_test() as instance:
        result = materialize(defs, name, instance)
        assert result.success
        (materialization,) = result.asset_materializations_for_node(f"kinesis_batch__{name.replace('-', '_')}")
        metadata = {key: value.value for key, value in materialization.metadata.items()}
        assert (metadata["records"], metadata["rows"], metadata["dead_letters"]) == (40, 30, 10)
        assert metadata["rows_by_table"] == {"click": 20, "view": 10}
        assert metadata["dead_letter_reasons"] == {"route: no route": 10}
        assert checks(defs, name, instance)["dead_letters"] is True

    def table(route: str) -> dict[str, list[Any]]:
        return read_rows(open_sink("delta", f"{root}/{route}", app=default_table(name), stream=name, s3=s3_settings()))

    assert sorted(table("click")["n"]) == [i for i in range(40) if kinds[i % 4] == "click"]
    assert sorted(table("view")["n"]) == list(range(1, 40, 4))
