"""``maintain --output TEMPLATE`` of a routed stream (``--route-by``): every table its runs made
is maintained, and its dead-letter output; each keeps its rows in fewer files, and each
maintenance is an OpenLineage run of its own (the table its input and output)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.cli import main
from kinesis_batch.run import CatchUpRun
from tests.openlineage.support import events, file_transport
from tests.output.support import run_config
from tests.scenarios.test_routed import event, landed, routed_output
from tests.streams import StreamFactory, put

KINDS = ["click", "view", "buy", None]


def test_maintain_of_a_template_maintains_every_table_the_stream_made_and_its_dead_letters(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    output = routed_output("delta", "local", tmp_path, monkeypatch)
    config = run_config(name, output, "router", decode="json", route_by="type", read_limits="none")
    for run in range(4):  # four small batches: several files in each table
        put(kinesis, name, 16, start=16 * run, payload=lambda i: event(i, KINDS[i % 4]))
        CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark).run()
    before = {kind: landed(config, kind) for kind in KINDS[:3]}
    capsys.readouterr()
    lineage = tmp_path / "lineage.jsonl"  # each table's maintenance is an OpenLineage run of its own
    for key, value in file_transport(lineage).items():
        monkeypatch.setenv(key, value)

    code = main(["maintain", "--format", "delta", "--output", config.output, "--retain-hours", "0", "--json"])

    assert code == 0
    reports = json.loads(capsys.readouterr().out)
    root = Path(config.output).parent
    assert set(reports) == {str(root / kind) for kind in ("_dead_letter", "buy", "click", "view")}
    for uri, report in reports.items():
        assert report["after"]["files"] < report["before"]["files"], uri
    assert {kind: landed(config, kind) for kind in KINDS[:3]} == before, "maintenance changed the rows"
    runs: dict[str, list[dict[str, Any]]] = {}
    for found in events(lineage):
        runs.setdefault(found["run"]["runId"], []).append(found)
    assert len(runs) == 4
    for start, complete in runs.values():
        assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
        (table,), (written,) = complete["inputs"], complete["outputs"]
        assert (table["namespace"], table["name"]) == ("file", written["name"]) and complete["job"]["name"] == (
            f"maintain:{written['name']}"
        )
        statistics = written["outputFacets"]["outputStatistics"]
        assert statistics["fileCount"] == reports[written["name"]]["after"]["files"]
