"""A configured stream that decodes: its DAG (dag.test()) lands typed rows in a Delta table on S3
(moto, reached only through the Airflow connection) and the bad records in the dead-letter
table beside it; the end-of-run check passes within the dead-letter threshold and fails past
it, saying how many, which shards and the most common reason."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import s3_settings
from kinesis_batch.output import open_sink
from kinesis_batch.parsers import default_table
from tests.dags.test_kinesis_streams import AHEAD, dagbag_of, states
from tests.decoding.support import put_payloads
from tests.output.support import make_bucket, read_rows
from tests.streams import StreamFactory


def test_a_decoding_streams_dag_lands_typed_rows_and_dead_letters_and_checks_their_share(
    airflow_home: Path,
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = streams.create(shards=2)
    good = [json.dumps({"id": i, "page": f"/p/{i % 5}"}).encode() for i in range(40)]
    put_payloads(kinesis, name, [*good, b"{broken", b"[1]"])
    table = f"s3://{make_bucket()}/tables/events"
    streams_file = tmp_path / "streams.toml"
    streams_file.write_text(
        f'[[streams]]\nstream = "{name}"\noutput = "{table}"\nformat = "delta"\ndecode = "json"\n'
        "dead_letter_threshold = 0.2\n"
    )
    dag = dagbag_of(streams_file, monkeypatch).get_dag(f"kinesis_catchup__{name}")
    assert dag.params["decode"] == "json" and "decode" in (dag.doc_md or "")

    with monkeypatch.context() as only_the_connection:
        only_the_connection.delenv("AWS_ENDPOINT_URL_S3")  # S3 through the aws_default connection only
        first = dag.test(logical_date=datetime.now(UTC) + AHEAD)
        assert first.state == "success", states(first)
        put_payloads(kinesis, name, [b"{nope"] * 9 + [json.dumps({"id": 99}).encode()])
        capsys.readouterr()
        second = dag.test(logical_date=datetime.now(UTC) + 2 * AHEAD)

    app = default_table(name)
    rows = read_rows(open_sink("delta", table, app=app, stream=name, s3=s3_settings()))
    letters = read_rows(open_sink("delta", table + "_dead_letter", app=app, stream=name, s3=s3_settings()))
    assert sorted(rows["id"]) == [*range(40), 99] and {"page", "record_index", "batch_id"} <= set(rows)
    assert sorted(letters["data"]) == sorted([b"{broken", b"[1]", *[b"{nope"] * 9])
    # Past the threshold: 9 of 10 records of the last batch; the run itself succeeded.
    assert states(second)["check_lag"] == "failed" and states(second)["commit_checkpoints"] == "success"
    said = capsys.readouterr()
    assert "9 of 10 records (90.00%) of batch" in said.out + said.err
    assert "over the 20.00% threshold" in said.out + said.err and "most common: decode: not JSON" in said.out + said.err
