"""Lineage is sent only where OpenLineage is configured the standard way, and not when it is
disabled (table of cases); a run's end is ABORT where a lost lease or a stop ended it, FAIL
otherwise, with the error's one line; a transport that fails is one warning, through the
client's own file transport."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.transport.file import FileConfig, FileTransport

from kinesis_batch.errors import ForeignOutputError, LeaseLostError, ShutdownError
from kinesis_batch.openlineage.emit import RunLineage, Sender, configured
from kinesis_batch.openlineage.maintenance import MaintenanceLineage
from tests.openlineage.support import events
from tests.output.support import run_config


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, False),
        ({"OPENLINEAGE_URL": "http://marquez:5000"}, True),
        ({"OPENLINEAGE_CONFIG": "/etc/openlineage.yml"}, True),
        ({"OPENLINEAGE__TRANSPORT__TYPE": "file"}, True),
        ({"OPENLINEAGE_URL": "http://marquez:5000", "OPENLINEAGE_DISABLED": "true"}, False),
        ({"OPENLINEAGE_NAMESPACE": "team"}, False),  # names the job, configures no transport
    ],
)
def test_configured_the_standard_way(environ: dict[str, str], expected: bool) -> None:
    assert configured(environ) is expected


def writing(path: Path) -> Sender:
    """A sender through the client's own file transport, to ``path``."""
    return Sender(OpenLineageClient(transport=FileTransport(FileConfig(log_file_path=str(path), append=True))))


@pytest.mark.parametrize(
    ("error", "state"),
    [
        (LeaseLostError("lost the leases of shardId-000000000001 to w2; nothing was published"), "ABORT"),
        (ShutdownError("stopped by SIGTERM before publishing"), "ABORT"),
        (ForeignOutputError("the output holds files no run of this consumer wrote"), "FAIL"),
        (OSError("No space left on device\n  in a traceback's second line"), "FAIL"),
    ],
    ids=["lease-lost", "stopped", "kinesis-batch-error", "other-error"],
)
def test_a_lost_lease_or_a_stop_ends_a_run_as_abort_and_any_other_error_as_fail_with_its_one_line(
    error: Exception, state: str, tmp_path: Path
) -> None:
    log = tmp_path / "lineage.jsonl"
    config = run_config("orders", ("--output", str(tmp_path / "out"), "--format", "parquet"), "w1")
    lineage = RunLineage(writing(log), config, "batch-1", ("kinesis://us-east-1:123456789012", "orders"))
    lineage.start()
    lineage.failed(error)

    start, end = events(log)
    assert (start["eventType"], end["eventType"]) == ("START", state)
    assert start["run"]["runId"] == end["run"]["runId"]
    assert end["run"]["facets"]["errorMessage"]["message"] == str(error).splitlines()[0]


def test_a_failed_maintenance_writes_fail_naming_its_table_as_input(tmp_path: Path) -> None:
    log = tmp_path / "lineage.jsonl"
    lineage = MaintenanceLineage(writing(log), ("s3://lake", "tables/orders"))
    lineage.start()
    lineage.failed(RuntimeError("vacuum: the table's log is gone"))

    start, fail = events(log)
    assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
    assert fail["job"]["name"] == "maintain:tables/orders"
    assert [(d["namespace"], d["name"]) for d in fail["inputs"]] == [("s3://lake", "tables/orders")]
    assert fail["run"]["facets"]["errorMessage"]["message"] == "vacuum: the table's log is gone"


def test_a_transport_that_fails_is_one_warning_and_the_run_sends_no_more(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lineage = MaintenanceLineage(writing(tmp_path / "no-such-folder" / "lineage.jsonl"), ("file", "/t"))
    with caplog.at_level(logging.WARNING, logger="kinesis_batch.openlineage.emit"):
        lineage.start()
        lineage.complete("m-1", files=3, size=1024)
    assert [r.getMessage() for r in caplog.records if r.name == "kinesis_batch.openlineage.emit"] == [
        "lineage: OpenLineage did not take this run's events (Failed to write to log file "
        f"`{tmp_path}/no-such-folder/lineage.jsonl`: [Errno 2] No such file or directory: "
        f"'{tmp_path}/no-such-folder/lineage.jsonl'); the run is unaffected"
    ]
    assert lineage.sender.client is None
