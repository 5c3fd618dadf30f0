"""`kinesis-batch run` into every output format, locally and on S3 (moto): the rows read back
with the format's own reader are exactly once, and `status --json` carries the output's last batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import cli
from kinesis_batch.config import RunConfig
from kinesis_batch.run import CatchUpRun
from tests.output.support import KIND_IDS, KINDS, output_args, read_rows, sink_of
from tests.runs import assert_exactly_once, assert_per_key_order, diamond_stream
from tests.streams import StreamFactory, put

pytestmark = pytest.mark.contract("spark", why="the read step into each format on this PySpark, read back")


def run_cli(capsys: pytest.CaptureFixture[str], spark: Any, *args: str) -> tuple[int, str, str]:
    """The command line in this process, on the session's shared Spark."""
    code = cli.main(list(args), spark=lambda: spark)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("format", "where"), KINDS, ids=KIND_IDS)
def test_runs_into_each_format_are_exactly_once_and_status_shows_the_last_batch(
    format: str,
    where: str,
    kinesis: Any,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 100)
    output = output_args(format, where, tmp_path, monkeypatch)
    run = ("run", "--stream", name, *output, "--read-limits", "none", "--json")

    code, out, err = run_cli(capsys, spark, *run)
    assert code == 0, err
    first = json.loads(out)
    assert first["published"] and first["records"] == len(sent)
    sink = sink_of(output, app=f"kinesis-batch-{name}", stream=name)
    rows = read_rows(sink)
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
    assert set(rows["batch_id"]) == {first["batch_id"]}
    # A retried publish step (an Airflow task retry) after the batch went in commits nothing.
    options = dict(zip(output[::2], output[1::2], strict=True))
    config = RunConfig.of(stream=name, output=options["--output"], format=format, catalog=options.get("--catalog"))
    again = CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark, run_id=first["batch_id"])
    assert again.publish() is True
    assert_exactly_once(read_rows(sink), sent)

    more = put(kinesis, name, 50, start=len(sent))
    code, out, err = run_cli(capsys, spark, *run)
    assert code == 0, err
    assert json.loads(out)["records"] == len(more)
    code, out, err = run_cli(capsys, spark, *run)
    assert code == 0 and json.loads(out)["published"] is False, err
    assert_exactly_once(read_rows(sink), sent + more)

    code, out, err = run_cli(capsys, spark, "status", "--stream", name, *output, "--json")
    assert code == 0, err
    status = json.loads(out)
    in_last = [row for row in status if "output_batch" in row]
    assert in_last, "status --json does not carry the output's last batch"
    assert all(row["output_agrees"] for row in in_last), in_last
    assert {row["output_batch"] for row in in_last} == {sink.last_batch().batch_id}  # type: ignore[union-attr]
