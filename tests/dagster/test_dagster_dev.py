"""`dagster dev` serves the shipped definitions with the shipped dagster.yaml: a real process on
a free loopback port, asked through its GraphQL endpoint for the asset and the jobs, the
asset's page shown in Debian's Chromium after one materialization on the local stack (the
README's picture comes from test-artifacts/), stopped by its process group."""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from devkit.stack import LOOPBACK, LocalServer, LocalStack, free_port, spawn_server

from tests.airflow.ui.test_page_in_chromium import CHROMIUM, CHROMIUM_FLAGS
from tests.runs import REPO, session_is_gone
from tests.streams import StreamFactory, put

pytestmark = [
    pytest.mark.contract("dagster", why="dagster dev serving the shipped definitions"),
    pytest.mark.isolated("a dagster dev server"),
]

QUERY = """{
  assetNodes { assetKey { path } }
  repositoriesOrError { ... on RepositoryConnection { nodes { jobs { name } } } }
}"""


SHIPPED = REPO / "deploy" / "dagster"
STREAM = "demo-clicks"  # the shipped streams file's


def shipped_streams_in(home: Path, output: Path) -> Path:
    """The shipped streams file in ``home``, its output moved to ``output`` (the shipped one is
    one fixed folder, which two test sessions would share)."""
    text = (SHIPPED / "streams.toml").read_text()
    (shipped_output,) = re.findall(r'^output = "(.*)"$', text, flags=re.MULTILINE)
    path = home / "kinesis-batch-streams.toml"
    path.write_text(text.replace(shipped_output, str(output)))
    return path


def materialized_once(stack: LocalStack, home: Path, streams_file: Path) -> None:
    """One materialization of the shipped stream's asset into ``home``'s instance, on the local
    stack: what the asset's page shows after a run."""
    from kinesis_batch.aws import kinesis_client
    from kinesis_batch.dagster import definitions_from_file

    with pytest.MonkeyPatch.context() as environment:
        for name, value in {**stack.env("kinesalite"), "DAGSTER_HOME": str(home)}.items():
            environment.setenv(name, value)
        kinesis = kinesis_client()
        streams = StreamFactory(kinesis)  # the UI tests' stream of this name may still be going
        streams.create(shards=2, name=STREAM)
        put(kinesis, STREAM, 500)
        defs = definitions_from_file(streams_file)
        with dg.DagsterInstance.get() as instance:
            asset = defs.resolve_assets_def(dg.AssetKey(["kinesis_batch", STREAM]))
            assert dg.materialize([asset], instance=instance).success
        streams.delete_all()


@pytest.fixture(scope="module")
def dagster_dev(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest, stack: LocalStack, spark: Any
) -> Iterator[LocalServer]:
    home = tmp_path_factory.mktemp("dagster-home")
    shutil.copy(SHIPPED / "dagster.yaml", home)  # the shipped snippet must load too
    workdir = Path(tempfile.mkdtemp(prefix="kinesis-batch-demo-"))  # as make demo's (the docs' picture shows it)
    request.addfinalizer(lambda: shutil.rmtree(workdir, ignore_errors=True))
    streams_file = shipped_streams_in(home, workdir / "output")
    materialized_once(stack, home, streams_file)
    port = free_port()
    argv = [str(Path(sys.executable).with_name("dagster")), "dev", "--host", LOOPBACK, "--port", str(port)]
    env = {"DAGSTER_HOME": str(home), "KINESIS_BATCH_DAGSTER_STREAMS": str(streams_file)}
    # It ignores SIGTERM: a short grace, then SIGKILL to its whole process group.
    server = spawn_server("dagster-dev", argv, port=port, cwd=REPO, env=env, log_dir=home, grace=2, ready_timeout=180)
    try:
        yield server
    finally:
        server.stop()
        assert session_is_gone(server.process.pid, timeout=15), "a process of dagster dev outlived its process group"


def _graphql(url: str, timeout: float = 180.0) -> dict[str, Any]:
    """The answer once the code location is loaded (the webserver answers before it is)."""
    deadline = time.monotonic() + timeout
    body = json.dumps({"query": QUERY}).encode()
    answer: dict[str, Any] = {}
    while time.monotonic() < deadline:
        request = urllib.request.Request(f"{url}/graphql", data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                answer = json.load(response)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            answer = {}
        if answer.get("data", {}).get("assetNodes"):
            return answer
        time.sleep(1)
    pytest.fail(f"no asset from dagster dev in {timeout:.0f} s: {answer}")


def test_dagster_dev_serves_the_asset_and_the_jobs_of_the_shipped_streams(
    dagster_dev: LocalServer, artifacts_dir: Path
) -> None:
    data = _graphql(dagster_dev.url)["data"]

    keys = {"/".join(node["assetKey"]["path"]) for node in data["assetNodes"]}
    assert {"kinesis_batch/demo-clicks", "kinesis/demo-clicks"} <= keys
    jobs = {job["name"] for repo in data["repositoriesOrError"]["nodes"] for job in repo["jobs"]}
    assert {"kinesis_batch_demo_clicks_catch_up", "kinesis_batch_demo_clicks_backfill"} <= jobs

    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is needed for the screenshot (tools/bootstrap.sh installs it as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{dagster_dev.url}/assets/kinesis_batch/{STREAM}", wait_until="networkidle")
            page.get_by_text("one materialization is one catch-up run").first.wait_for(timeout=60_000)
            page.get_by_role("cell", name="batch_id", exact=True).wait_for(timeout=60_000)  # the run's metadata
            skip = page.get_by_role("button", name="Skip")  # Dagster's own invitation to its community
            if skip.count():
                skip.first.click()
            page.screenshot(path=str(artifacts_dir / "dagster-ui-asset.png"), full_page=True)
        finally:
            browser.close()
