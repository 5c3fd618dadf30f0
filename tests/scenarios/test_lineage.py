"""OpenLineage events of a run, with the client's file transport: a decoding CLI run writes START
then COMPLETE naming the stream and both its outputs, whose row counts equal the table's rows
and the dead letters; a run that fails writes FAIL with its one-line error, both naming the parent the standard
``OPENLINEAGE_PARENT_ID`` variable gives; an endpoint that
cannot be reached leaves the run exit 0, its output exactly once, with one warning line.
(The events' checks: tests.openlineage.support.)"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from tests.openlineage.support import events, file_transport
from tests.output.support import read_rows, sink_of
from tests.runs import assert_exactly_once, cli, read_output
from tests.streams import StreamFactory, put

RUN = ("--read-limits", "none", "--spark-master", "local[1]")
PARENT = "0193a1b2-0000-7000-8000-00000000c10c"


def test_a_run_writes_start_then_complete_naming_the_stream_and_its_outputs_with_their_rows(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    put(kinesis, name, 30, payload=lambda i: json.dumps({"n": i}).encode() if i % 10 else b"{broken")
    output, log = tmp_path / "out", tmp_path / "lineage.jsonl"
    done = cli(
        "run", "--stream", name, "--output", str(output), "--decode", "json", *RUN, env=file_transport(log), spark=spark
    )
    assert done.returncode == 0, done.stderr

    start, complete = events(log)
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    assert start["run"]["runId"] == complete["run"]["runId"] and uuid.UUID(start["run"]["runId"]).version == 5
    assert complete["inputs"][0]["name"] == name and complete["inputs"][0]["namespace"].startswith("kinesis://")
    table, dead = complete["outputs"]
    assert (table["namespace"], table["name"]) == ("file", str(output))
    assert dead["name"] == f"{output}_dead_letter"
    rows = read_rows(sink_of(("--output", str(output), "--format", "parquet")))
    assert table["outputFacets"]["outputStatistics"]["rowCount"] == len(rows["n"]) == 27
    assert dead["outputFacets"]["outputStatistics"]["rowCount"] == 3
    assert [(f["name"], f["type"]) for f in table["facets"]["schema"]["fields"]] == [("n", "int64")]  # decoded
    facet = complete["run"]["facets"]["kinesisBatch"]
    assert facet["records"] == 30 and facet["deadLetters"] == 3
    read = complete["inputs"][0]["inputFacets"]
    assert read["inputStatistics"]["rowCount"] == sum(s["records"] for s in read["kinesisShards"]["shards"]) == 30
    assert {s["from"] for s in read["kinesisShards"]["shards"]} == {"TRIM_HORIZON"}
    assert "parent" not in complete["run"]["facets"]  # a command line's run of its own


def test_a_failed_run_writes_fail_with_its_one_line_and_an_unreachable_endpoint_is_one_warning(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=1)
    sent = put(kinesis, name, 10)
    not_a_folder, log = tmp_path / "a-file", tmp_path / "lineage.jsonl"
    not_a_folder.write_text("")
    scheduler = {"OPENLINEAGE_PARENT_ID": f"cron/hourly-clicks/{PARENT}"}  # what started it, as the variables say
    failed = cli(
        "run", "--stream", name, "--output", str(not_a_folder), *RUN, env=file_transport(log) | scheduler, spark=spark
    )
    assert failed.returncode == 2, failed.stderr
    start, fail = events(log)
    assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
    for event in (start, fail):
        parent = event["run"]["facets"]["parent"]
        assert (parent["job"]["name"], parent["run"]["runId"], parent["root"]["run"]["runId"]) == (
            "hourly-clicks",
            PARENT,
            PARENT,
        )
    message = fail["run"]["facets"]["errorMessage"]["message"]
    assert "\n" not in message and message in failed.stderr and str(not_a_folder) in message

    other = tmp_path / "other"
    # The client's own HTTP transport, configured by its variables, without its retries (five,
    # 9 s of backoff against a closed port: the client's default, which OPENLINEAGE_URL takes).
    nowhere = {
        "OPENLINEAGE__TRANSPORT__TYPE": "http",
        "OPENLINEAGE__TRANSPORT__URL": "http://127.0.0.1:9",
        "OPENLINEAGE__TRANSPORT__RETRY__TOTAL": "0",
    }
    down = cli("run", "--stream", name, "--output", str(other), *RUN, env=nowhere, spark=spark)
    assert down.returncode == 0, down.stderr
    warnings = [line for line in down.stderr.splitlines() if "did not take this run's events" in line]
    assert len(warnings) == 1 and "Traceback" not in down.stderr, down.stderr
    assert_exactly_once(read_output(other), sent)
