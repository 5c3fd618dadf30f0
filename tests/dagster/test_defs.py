"""The shipped Dagster definitions load and validate; the per-stream pieces have the shape a
Dagster user expects (names, tags, pool, schedule bound, config refused at launch)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from kinesis_batch.dagster import AwsClients, SparkResource, build_stream_defs, definitions_from_file
from kinesis_batch.errors import IllegalArgumentError
from tests.runs import REPO

pytestmark = [
    pytest.mark.contract("dagster", why="the definitions loaded and validated by this Dagster"),
]

SHIPPED = REPO / "deploy" / "dagster" / "streams.toml"


def test_the_shipped_definitions_are_loadable() -> None:
    defs = definitions_from_file(SHIPPED)

    dg.Definitions.validate_loadable(defs)
    assert defs.resolve_job_def("kinesis_batch_demo_clicks_catch_up") is not None


@pytest.mark.isolated("a fresh environment")
def test_dagster_definitions_validate_passes_on_the_project_settings() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate"],
        capture_output=True,
        text=True,
        cwd=REPO,  # [tool.dagster] in pyproject.toml names the module
        env={**os.environ, "KINESIS_BATCH_DAGSTER_STREAMS": str(SHIPPED)},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Validation successful" in done.stdout + done.stderr


def test_five_streams_from_one_file_merge_into_one_set_of_definitions(tmp_path: Path) -> None:
    streams = "\n".join(
        f'[[streams]]\nstream = "s{n}"\noutput = "{tmp_path}/s{n}"\n' for n in range(5)
    )  # fmt: skip
    path = tmp_path / "streams.toml"
    path.write_text('[aws]\nregion_name = "eu-west-1"\n\n' + streams)

    defs = definitions_from_file(path)

    dg.Definitions.validate_loadable(defs)
    keys = {spec.key for spec in defs.resolve_all_asset_specs()}
    assert {dg.AssetKey(["kinesis_batch", f"s{n}"]) for n in range(5)} <= keys
    assert {dg.AssetKey(["kinesis", f"s{n}"]) for n in range(5)} <= keys
    assert len([s for s in defs.schedules or [] if s.name.endswith("_hourly")]) == 5


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no [[streams]] table"),
        ('[[streams]]\nstream = "s"\n', "stream 1 (s): output: missing"),  # no output
        ('[[streams]]\nstream = "s"\noutput = "x"\ncolour = "red"\n', "colour"),
        ('[[streams]]\nstream = "bad name!"\noutput = "x"\n', "stream 1 (bad name!)"),
        ('[[streams]]\nstream = "s"\noutput = "s3://b/p"\n', "delta"),  # parquet on S3: not atomic
        ("[[streams]\n", "streams.toml"),  # not TOML
        (
            '[[streams]]\nstream = "s"\noutput = "/a"\n\n[[streams]]\nstream = "s"\noutput = "/b"\n',
            "stream 2 (s): stream: 's' is listed twice",
        ),
    ],
)
def test_a_bad_streams_file_fails_with_one_line_naming_the_file_and_the_stream(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "streams.toml"
    path.write_text(text)

    with pytest.raises(IllegalArgumentError) as raised:
        definitions_from_file(path)

    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_the_hourly_schedule_reads_up_to_its_tick_and_tags_the_stream(tmp_path: Path) -> None:
    defs = build_stream_defs("clicks", output=str(tmp_path))
    schedule = defs.resolve_schedule_def("kinesis_batch_clicks_hourly")
    tick = datetime(2026, 11, 23, 11, 0, tzinfo=UTC)

    result = schedule.evaluate_tick(dg.build_schedule_context(scheduled_execution_time=tick))

    (request,) = result.run_requests or []
    assert request.run_key == tick.isoformat()
    assert request.run_config["ops"]["kinesis_batch__clicks"]["config"]["read_bound"] == tick.isoformat()
    job = defs.resolve_job_def("kinesis_batch_clicks_catch_up")
    assert job.tags["kinesis_batch/stream"] == "clicks"
    assert defs.resolve_job_def("kinesis_batch_clicks_backfill").tags["kinesis_batch/stream"] == "clicks"
    (node,) = [n for n in job.nodes if n.name == "kinesis_batch__clicks"]
    assert node.definition.pool == "kinesis_batch/clicks"


def test_a_stream_named_by_its_arn_names_its_assets_jobs_and_pool_by_its_name(tmp_path: Path) -> None:
    defs = build_stream_defs("arn:aws:kinesis:us-east-1:111111111111:stream/clicks", output=str(tmp_path))

    job = defs.resolve_job_def("kinesis_batch_clicks_catch_up")

    assert job.tags["kinesis_batch/stream"] == "clicks"
    assert {key.path[-1] for key in defs.resolve_all_asset_keys()} == {"clicks"}
    (node,) = [n for n in job.nodes if n.name == "kinesis_batch__clicks"]
    assert node.definition.pool == "kinesis_batch/clicks"


@pytest.mark.parametrize(
    "config",
    [{"format": "csv"}, {"shards": "all"}, {"move_main_checkpoints": "yes"}, {"colour": "red"}],
)
def test_backfill_values_dagster_can_type_are_refused_at_launch(tmp_path: Path, config: dict[str, object]) -> None:
    job = build_stream_defs("clicks", output=str(tmp_path)).resolve_job_def("kinesis_batch_clicks_backfill")

    with pytest.raises(dg.DagsterInvalidConfigError):
        dg.validate_run_config(job, {"ops": {"kinesis_batch_clicks_backfill_step": {"config": config}}})


def test_resources_fall_back_to_the_standard_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS", "http://127.0.0.1:1")

    kinesis = AwsClients().kinesis()
    explicit = AwsClients(region_name="eu-west-1", endpoint_url="http://127.0.0.1:2").dynamodb()

    assert (kinesis.meta.region_name, kinesis.meta.endpoint_url) == ("ap-south-1", "http://127.0.0.1:1")
    assert (explicit.meta.region_name, explicit.meta.endpoint_url) == ("eu-west-1", "http://127.0.0.1:2")
    assert SparkResource().master == "local[*]"
    assert AwsClients(endpoint_url="http://127.0.0.1:2").sts_endpoint() == "http://127.0.0.1:2"  # a role's, too


def test_without_a_streams_file_the_code_location_says_how_to_name_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kinesis_batch.dagster.defs import definitions_from_environment

    monkeypatch.delenv("KINESIS_BATCH_DAGSTER_STREAMS", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))

    with pytest.raises(IllegalArgumentError) as raised:
        definitions_from_environment()
    assert "KINESIS_BATCH_DAGSTER_STREAMS" in str(raised.value) and "\n" not in str(raised.value)

    (tmp_path / "kinesis-batch-streams.toml").write_text(SHIPPED.read_text())  # where Dagster's home is
    assert definitions_from_environment().resolve_job_def("kinesis_batch_demo_clicks_catch_up") is not None
