"""`dagster dev` serves the shipped definitions with the shipped dagster.yaml: a real process on
a free loopback port, asked through its GraphQL endpoint for the asset and the jobs, the
asset's page shown in Debian's Chromium (the README's picture comes from test-artifacts/),
stopped by its process group."""

from __future__ import annotations

import json
import shutil
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.devstack import LOOPBACK, LocalServer, free_port, spawn_server
from tests.airflow.ui.test_page_in_chromium import CHROMIUM, CHROMIUM_FLAGS
from tests.runs import REPO, session_is_gone

QUERY = """{
  assetNodes { assetKey { path } }
  repositoriesOrError { ... on RepositoryConnection { nodes { jobs { name } } } }
}"""


@pytest.fixture(scope="module")
def dagster_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    home = tmp_path_factory.mktemp("dagster-home")
    shutil.copy(REPO / "deploy" / "dagster" / "dagster.yaml", home)  # the shipped snippet must load too
    port = free_port()
    argv = [str(Path(sys.executable).with_name("dagster")), "dev", "--host", LOOPBACK, "--port", str(port)]
    # It ignores SIGTERM: a short grace, then SIGKILL to its whole process group.
    server = spawn_server(
        "dagster-dev", argv, port=port, cwd=REPO, env={"DAGSTER_HOME": str(home)}, log_dir=home, grace=2,
        ready_timeout=180,
    )  # fmt: skip
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
            page.goto(f"{dagster_dev.url}/assets/kinesis_batch/demo-clicks", wait_until="networkidle")
            page.get_by_text("one materialization is one catch-up run").first.wait_for(timeout=60_000)
            page.screenshot(path=str(artifacts_dir / "dagster-ui-asset.png"), full_page=True)
        finally:
            browser.close()
