"""The three places a user reads the status from show a given state exactly as they did before
the status became typed values: the CLI's ``status --json``, the Airflow page's JSON and
Dagster's check metadata, for one decoding consumer with a committed run and a second run that
published and has not committed (``status_views.json`` was recorded from the untyped status).

What differs from one run of the test to the next is replaced before comparing: the temporary
path, times, lags and sizes (numbers by whether they are zero), and sequence numbers (by their
rank, so "this checkpoint is where that batch ended" is still compared)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import dagster as dg

from kinesis_batch.config import RunConfig
from kinesis_batch.dagster import build_stream_defs
from kinesis_batch.run import CatchUpRun
from tests.runs import cli, diamond_stream
from tests.streams import StreamFactory, put

RECORDED = Path(__file__).with_name("status_views.json")
RECORD = os.environ.get("KINESIS_BATCH_RECORD_STATUS_VIEWS") == "1"  # to record it again, on purpose
NAME = "status-views"

# Values that change with the clock or the bytes the writer chose: compared by being zero or not.
VARYING = {
    "lag_seconds", "max_lag_seconds", "millis_behind_latest", "lease_expires_at_ms", "lag_at_start_ms",
    "bytes", "mean_file_bytes", "recent_bytes", "recent_mean_file_bytes",
}  # fmt: skip
SEQUENCE = re.compile(r"\d{20,}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?")
SIZE = re.compile(r"\d+(\.\d+)? (KiB|MiB)")


def event(i: int) -> bytes:
    """A click event; every tenth record is cut short (a dead letter)."""
    whole = json.dumps({"click": i, "page": f"/products/{i % 7}"}).encode()
    return whole[:9] if i % 10 == 3 else whole


def test_status_json_airflow_page_and_dagster_checks_show_the_state_as_before(
    kinesis: Any,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    airflow_home: Path,
) -> None:
    out = tmp_path / "out"
    name = streams.create(shards=3, name=NAME)
    diamond_stream(kinesis, name, 10, payload=event)

    def run(run_id: str) -> CatchUpRun:
        config = RunConfig.of(stream=name, output=str(out), decode="json", worker_id=f"worker-{run_id}")
        return CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark, run_id=run_id)

    run("run-one").run()
    put(kinesis, name, 20, start=1000, payload=event)
    published = run("run-two")
    published.start()
    published.read()
    assert published.publish()  # and stops before it commits the checkpoints

    # No capsys here: Airflow's app sets up logging handlers on the stderr of the moment, and
    # capsys's closes with this test (later tests' stderr would get "Logging error" lines).
    views = {"cli": _cli_status(name, out), "airflow": _airflow_page(name, out), "dagster": _dagster_checks(name, out)}
    seen = _stable(views, str(tmp_path))
    if RECORD:
        RECORDED.write_text(json.dumps(seen, indent=1, sort_keys=True) + "\n")
    assert seen == json.loads(RECORDED.read_text())


def _cli_status(name: str, out: Path) -> Any:
    done = cli("status", "--stream", name, "--output", str(out), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _airflow_page(name: str, out: Path) -> Any:
    from airflow.api_fastapi.app import create_app, get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from fastapi.testclient import TestClient

    with TestClient(create_app(apps="core")) as client:
        token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin"))
        response = client.get(
            f"/kinesis-batch/api/streams/{name}",
            params={"output": str(out), "format": "parquet"},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert response.status_code == 200, response.text
    return response.json()


def _dagster_checks(name: str, out: Path) -> Any:
    defs = build_stream_defs(name, output=str(out), decode="json", small_file_mb=0)
    job = defs.resolve_job_def(f"kinesis_batch_{name.replace('-', '_')}_checks")
    with dg.instance_for_test() as instance:
        evaluations = job.execute_in_process(instance=instance).get_asset_check_evaluations()
    return {
        e.check_name: {
            "passed": e.passed,
            "severity": e.severity.value,
            "metadata": {key: value.value for key, value in e.metadata.items()},
        }
        for e in evaluations
    }


def _stable(views: Any, tmp: str) -> Any:
    """``views`` with what varies between runs of this test replaced (see the module's docstring)."""
    text = json.dumps(views, sort_keys=True)
    ranks = {seq: i for i, seq in enumerate(sorted(set(SEQUENCE.findall(text)), key=int))}

    def stable(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: stable(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [stable(v, key) for v in value]
        if key in VARYING and isinstance(value, int | float) and not isinstance(value, bool):
            return "zero" if value == 0 else "not zero"
        if isinstance(value, str):
            value = SEQUENCE.sub(lambda m: f"<sequence {ranks[m.group()]}>", value.replace(tmp, "<tmp>"))
            return SIZE.sub(r"<size> \2", TIME.sub("<time>", value))
        return value

    return stable(views)
