"""A run's metrics, end to end: ``--metrics cloudwatch`` puts the run's figures into CloudWatch
(moto), read back equal to what the run read and wrote; ``emf`` writes one EMF line; and a
backend that cannot be reached (CloudWatch, a Pushgateway) leaves the run exit 0, its output
exactly once, with one warning line."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import cloudwatch_client, dynamodb_client, kinesis_client
from kinesis_batch.run import CatchUpRun
from tests.metrics.test_cloudwatch import sums
from tests.metrics.test_emf import assert_emf
from tests.output.support import read_rows, run_config, sink_of
from tests.runs import assert_exactly_once, cli, data_of, read_output
from tests.streams import StreamFactory, put

WARNING = "did not take this run's metrics"


def run(stream: str, output: Path, spark: Any, **metrics: Any) -> Any:
    config = run_config(stream, ("--output", str(output), "--format", "parquet"), "w", read_limits="none", **metrics)
    return CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark).run()


def test_cloudwatch_gets_the_runs_records_and_rows_and_emf_one_line(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = streams.create(shards=2)
    put(kinesis, name, 40, payload=lambda i: json.dumps({"n": i}).encode() if i % 10 else b"{broken")
    report = run(
        name, tmp_path / "out", spark, metrics="cloudwatch", metrics_namespace="KinesisBatchRun", decode="json"
    )
    rows = len(read_rows(sink_of(("--output", str(tmp_path / "out"), "--format", "parquet")))["n"])
    figures = sums(cloudwatch_client(), "KinesisBatchRun", ["RecordsProcessed", "RowsWritten", "DeadLetters"], name)
    assert figures == {"RecordsProcessed": report.records, "RowsWritten": rows, "DeadLetters": 4} and rows == 36

    put(kinesis, name, 5, start=40)
    capsys.readouterr()
    run(name, tmp_path / "out", spark, metrics="emf", decode="json")
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith('{"_aws"')]
    assert assert_emf(line)["RecordsProcessed"] == 5


def test_a_backend_that_cannot_be_reached_is_one_warning_and_the_run_goes_on(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    name = streams.create(shards=2)
    sent = put(kinesis, name, 30)
    output = tmp_path / "out"
    down = cli(
        "run", "--stream", name, "--output", str(output), "--read-limits", "none", "--spark-master", "local[1]",
        "--metrics", "cloudwatch", env={"AWS_ENDPOINT_URL_CLOUDWATCH": "http://127.0.0.1:9"}, spark=spark,
    )  # fmt: skip
    assert down.returncode == 0, down.stderr
    (warning,) = [line for line in down.stderr.splitlines() if WARNING in line]
    assert warning.startswith(
        "WARNING kinesis_batch.metrics.send: metrics: cloudwatch did not take this run's metrics ("
    ) and warning.endswith("); the run is unaffected"), down.stderr
    assert_exactly_once(read_output(output), sent)

    more = put(kinesis, name, 10, start=30)
    caplog.clear()  # the first run's warning
    with caplog.at_level(logging.WARNING, logger="kinesis_batch.metrics"):
        report = run(name, output, spark, metrics="prometheus", pushgateway="http://127.0.0.1:9")
    assert report.published and report.records == 10
    assert len([r for r in caplog.records if WARNING in r.getMessage()]) == 1
    assert sorted(data_of(read_output(output))) == sorted(sent + more)
