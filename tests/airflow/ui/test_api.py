"""The plugin's JSON endpoints inside Airflow's own API app: anonymous requests are refused,
an authenticated user reads the lineage, leases, pending batch, lag and history of a stream
that one run committed and a second run holds mid-way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.streams import StreamFactory, put

pytestmark = pytest.mark.contract("airflow", why="the UI plugin's API served by this Airflow")

PAGE = "/kinesis-batch/"
API = "/kinesis-batch/api"


@pytest.fixture(scope="module")
def client(airflow_home: Path) -> Iterator[Any]:
    from airflow.api_fastapi.app import create_app
    from fastapi.testclient import TestClient

    with TestClient(create_app(apps="core")) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def token(client: Any) -> str:
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return str(get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin")))


@pytest.mark.parametrize("path", [PAGE, f"{API}/streams", f"{API}/streams/any", f"{API}/streams/any/history"])
def test_anonymous_requests_are_refused(client: Any, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 401, response.text


def test_a_forged_token_is_refused(client: Any) -> None:
    response = client.get(f"{API}/streams", headers={"Authorization": "Bearer not-a-jwt"})
    assert response.status_code in (401, 403)


def test_the_page_is_served_to_a_signed_in_user_by_cookie(client: Any, token: str) -> None:
    # The Airflow UI shows the page in an iframe: the browser sends the UI's _token cookie.
    client.cookies.set("_token", token)
    try:
        response = client.get(PAGE)
    finally:
        client.cookies.clear()
    assert response.status_code == 200
    assert "Kinesis consumers" in response.text and "api/streams" in response.text


def test_a_stream_mid_run_shows_lineage_leases_pending_batch_and_lag(
    client: Any, token: str, stream_mid_run: str
) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    listed = client.get(f"{API}/streams", headers=auth).json()
    assert {"stream": stream_mid_run, "table": f"kinesis-batch-{stream_mid_run}", "consumer": True} in listed

    status = client.get(f"{API}/streams/{stream_mid_run}", headers=auth).json()
    shards = {row["shard_id"]: row for row in status["shards"]}
    assert len(shards) == 7 and status["retention_hours"] == 24
    for row in shards.values():
        for parent in row["parent_shard_ids"]:
            assert row["shard_id"] in shards[parent]["children"]
    closed = [row for row in shards.values() if row["closed"]]
    open_ = [row for row in shards.values() if not row["closed"]]
    assert len(closed) == 5 and all(row["checkpoint"] == "SHARD_END" for row in closed)
    # Run three holds every open shard, its batch marked pending; the new records are unread.
    assert {(row["lease_owner"], row["pending_batch"]) for row in open_} == {("worker-two", "run-three")}
    assert status["summary"]["leased"] == 2 and status["summary"]["pending_batches"] == ["run-three"]
    assert any(row["oldest_unread_at"] for row in open_)
    assert {row["retention_risk"] for row in shards.values()} == {"ok"}

    history = client.get(f"{API}/streams/{stream_mid_run}/history", headers=auth).json()
    assert {entry["shard_id"] for entry in history} == set(shards)
    assert {entry["run_id"] for entry in history} == {"run-one", "run-two"}
    assert client.get(f"{API}/streams/{stream_mid_run}/history?run=run-three", headers=auth).json() == []

    # The chart's data: records per committed run (the diamond's 4 x 20, then 30 more), their
    # dead letters, and the lag each run began with, from the arrival times of the records it read first.
    runs = client.get(f"{API}/streams/{stream_mid_run}/runs", headers=auth).json()
    assert [(run["run"], run["records"], run["shards"]) for run in runs] == [("run-one", 80, 7), ("run-two", 30, 2)]
    # One record in ten does not decode: the runs' dead letters, and the rows of the others.
    assert [(run["dead_letters"], run["rows"]) for run in runs] == [(8, 72), (3, 27)]
    assert all(run["lag_at_start_ms"] is not None and run["lag_at_start_ms"] >= 0 for run in runs)


def test_mistakes_get_a_clear_status_and_message(client: Any, token: str, streams: StreamFactory) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    unknown = client.get(f"{API}/streams/no-such-stream", headers=auth)
    assert unknown.status_code == 404 and "no-such-stream" in unknown.json()["detail"]
    bad_name = client.get(f"{API}/streams/bad name!", headers=auth)
    assert bad_name.status_code == 400 and bad_name.json()["error"] == "IllegalArgumentError"
    never_run = streams.create(shards=1)
    no_table = client.get(f"{API}/streams/{never_run}", headers=auth)
    assert no_table.status_code == 404 and "lease table" in no_table.json()["detail"]
    listed = {entry["stream"]: entry["consumer"] for entry in client.get(f"{API}/streams", headers=auth).json()}
    assert listed[never_run] is False


def test_a_connection_without_a_region_is_named_not_a_server_error(
    client: Any, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", '{"conn_type": "aws", "login": "k", "password": "s"}')
    response = client.get(f"{API}/streams", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 400 and "set AWS_DEFAULT_REGION" in response.json()["detail"]


def test_given_its_output_a_stream_shows_the_last_batch_and_checkpoints_that_disagree_with_it(
    client: Any,
    token: str,
    kinesis: Any,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kinesis_batch.config import RunConfig
    from kinesis_batch.run import CatchUpRun
    from tests.output.support import make_bucket

    name = streams.create(shards=2)
    table = f"s3://{make_bucket()}/tables/clicks"

    def run(run_id: str) -> CatchUpRun:
        config = RunConfig.of(
            stream=name, output=table, format="delta", worker_id=f"worker-{run_id}", lease_seconds=600
        )
        return CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark, run_id=run_id)

    def status(**query: str) -> Any:
        with monkeypatch.context() as only_the_connection:
            only_the_connection.delenv("AWS_ENDPOINT_URL_S3")  # S3 through the aws_default connection
            return client.get(f"{API}/streams/{name}", params=query, headers={"Authorization": f"Bearer {token}"})

    def ok(**query: str) -> Any:
        response = status(**query)
        assert response.status_code == 200, response.text
        return response.json()

    put(kinesis, name, 30)
    run("run-one").run()
    assert ok()["output"] is None  # the output is not known
    agreeing = ok(output=table, format="delta")
    files = agreeing["output"].pop("table")
    assert files["files"] >= 1 and files["mean_file_bytes"] > 0 and files["last_maintenance"] is None
    assert agreeing["output"] | {"committed_at": None} == {
        "format": "delta",
        "uri": table,
        "last_batch": "run-one",
        "last_run": "run-one",
        "committed_at": None,
        "records": 30,
        "disagreeing_shards": [],
    }
    assert all(row["output_batch"] == "run-one" and row["output_agrees"] for row in agreeing["shards"])

    # Run two publishes, then stops before it commits the checkpoints.
    put(kinesis, name, 20, start=30)
    stopped = run("run-two")
    stopped.start()
    stopped.read()
    assert stopped.publish()
    behind = ok(output=table, format="delta")
    in_batch = [row for row in behind["shards"] if "output_batch" in row]
    assert behind["output"]["last_batch"] == "run-two" and behind["output"]["records"] == 20
    assert in_batch and behind["output"]["disagreeing_shards"] == [row["shard_id"] for row in in_batch]
    assert all(not row["output_agrees"] and row["checkpoint"] != row["output_end"] for row in in_batch)

    assert status(format="delta").status_code == 400
    wrong = status(output="/tmp/x", format="iceberg")
    assert wrong.status_code == 400 and "NAMESPACE.TABLE" in wrong.json()["detail"]


@pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)  # kinesalite knows no StreamARN
def test_a_stream_of_another_account_in_the_streams_file_is_read_by_arn_with_its_role(
    client: Any,
    token: str,
    kinesis: Any,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    stack: Any,
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from devkit.limits_proxy import ControlLimits, LimitsProxy
    from devkit.stack import STATIC_ENV

    from kinesis_batch.config import RunConfig
    from kinesis_batch.run import CatchUpRun
    from tests.conftest import DAGS

    name = streams.create(shards=2)
    put(kinesis, name, 12)
    output = tmp_path / "out"
    config = RunConfig.of(stream=name, output=str(output), worker_id="w", read_limits="none")
    CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark).run()
    arn = kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"]
    role = "arn:aws:iam::111111111111:role/kinesis-reader"
    fleet = tmp_path / "kinesis_streams.toml"
    fleet.write_text(
        f'[[streams]]\nstream = "{name}"\nstream_arn = "{arn}"\nrole_arn = "{role}"\nexternal_id = "lake-1"\n'
        f'output = "{output}"\n'
    )
    monkeypatch.setenv("AIRFLOW__KINESIS_BATCH__STREAMS_FILE", str(fleet))
    auth = {"Authorization": f"Bearer {token}"}
    with (
        LimitsProxy(stack.kinesis["kinesis-local"].url) as kinesis_proxy,
        LimitsProxy(stack.dynamodb.url, control=ControlLimits.none()) as dynamodb_proxy,
    ):
        connection = json.loads(
            stack.airflow_env(airflow_home, DAGS, kinesis="kinesis-local")["AIRFLOW_CONN_AWS_DEFAULT"]
        )
        services = connection["extra"]["service_config"]
        services["kinesis"], services["dynamodb"] = (
            {"endpoint_url": kinesis_proxy.url},
            {"endpoint_url": dynamodb_proxy.url},
        )
        services["sts"] = {"endpoint_url": stack.dynamodb.url}  # moto's STS hands out the role's keys
        monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", json.dumps(connection))

        status = client.get(f"{API}/streams/{name}", headers=auth)
        history = client.get(f"{API}/streams/{name}/history", headers=auth)
        runs = client.get(f"{API}/streams/{name}/runs", headers=auth)

    assert status.status_code == 200, status.text
    shards = status.json()["shards"]
    assert len(shards) == 2 and all(shard["checkpoint"] and not shard["lease_owner"] for shard in shards)
    assert history.status_code == 200 and len(history.json()) == 2, history.text
    assert runs.status_code == 200 and [run["records"] for run in runs.json()] == [12], runs.text
    ours = STATIC_ENV["AWS_ACCESS_KEY_ID"]
    theirs = set().union(*kinesis_proxy.access_keys.values())
    assert theirs and all(key.startswith("ASIA") for key in theirs), kinesis_proxy.access_keys  # the role's
    assert set().union(*dynamodb_proxy.access_keys.values()) == {ours}, dynamodb_proxy.access_keys
    assert set().union(*kinesis_proxy.named_by.values()) == {"StreamARN"}, kinesis_proxy.named_by
