"""The page as a user sees it: a real `airflow api-server` process, Debian's Chromium driven by
Playwright, the "Kinesis consumers" entry of Airflow's navigation showing the page in its frame.
A screenshot lands in test-artifacts/ (the README's picture comes from it)."""

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

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from devkit.stack import LOOPBACK, LocalServer, free_port, spawn_server

from tests.streams import StreamFactory

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # this machine's closed network refuses Chromium's own calls
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "kinesis-batch-ui-test"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason="Debian's chromium is needed (tools/bootstrap.sh installs it as root: apt-get install chromium)",
)


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The api-server's streams file (``[kinesis_batch] streams_file``), which a test writes: none
    at first (the page then shows no fleet). The DAG processor's is another: no DAG is made of it."""
    return tmp_path_factory.mktemp("fleet") / "kinesis-batch-streams.toml"


@pytest.fixture(scope="module")
def api_server(airflow_home: Path, tmp_path_factory: pytest.TempPathFactory, fleet_file: Path) -> Iterator[str]:
    """`airflow api-server` on a free loopback port, one admin user; stopped by its process group."""
    passwords = tmp_path_factory.mktemp("auth") / "passwords.json"
    passwords.write_text(json.dumps({"admin": PASSWORD}))
    port = free_port()
    env = {
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__KINESIS_BATCH__STREAMS_FILE": str(fleet_file),
    }
    airflow = str(Path(sys.executable).with_name("airflow"))
    argv = [airflow, "api-server", "--host", LOOPBACK, "--port", str(port), "--workers", "1", "--apps", "core"]
    server = spawn_server("api-server", argv, port=port, env=env, log_dir=airflow_home, grace=15, ready_timeout=120)
    try:
        _wait_healthy(server)
        yield server.url
    finally:
        server.stop()


def _wait_healthy(server: LocalServer, timeout: float = 120) -> None:
    """Listening comes before the app is up: wait for Airflow's own health check too."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{server.url}/api/v2/monitor/health", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    pytest.fail(f"airflow api-server not healthy after {timeout} s:\n{server.log_tail(40)}")


def _sign_in(url: str) -> str:
    """The token Airflow's login gives this user (the UI keeps it in the _token cookie)."""
    request = urllib.request.Request(
        f"{url}/auth/token",
        data=json.dumps({"username": "admin", "password": PASSWORD}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(json.load(response)["access_token"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


def signed_in(browser: Any, api_server: str, query: str = "") -> tuple[Any, Any]:
    """A signed-in user's browser on the page inside Airflow (``query``: the page's own), wide
    enough for the page whole, every column."""
    context = browser.new_context(viewport={"width": 1720, "height": 1400})
    context.add_cookies([{"name": "_token", "value": _sign_in(api_server), "url": api_server}])
    page = context.new_page()
    page.goto(f"{api_server}/plugin/kinesis-batch{query}")
    return context, page


@pytest.mark.contract("airflow", why="the UI plugin's page inside this Airflow's UI")
def test_the_consumer_page_renders_inside_airflow_for_a_signed_in_user(
    api_server: str, browser: Any, stream_mid_run: str, artifacts_dir: Path, demo_output: Path
) -> None:
    context, page = signed_in(browser, api_server, f"?stream={stream_mid_run}")
    frame = page.frame_locator("iframe")
    rows = frame.locator("#shards tr[data-shard]")
    rows.first.wait_for(timeout=60_000)

    assert rows.count() == 7
    assert frame.locator("#error").inner_text() == ""
    assert frame.locator("#stream").input_value() == stream_mid_run
    text = frame.locator("#shards").inner_text()
    assert "worker-two" in text and "run-three" in text and "SHARD_END" in text
    # Run one committed every shard once, run two the two open shards.
    assert frame.locator("#history tbody tr").count() == 9
    # The output, as a user names it in the form: its last batch, its files, never maintained.
    frame.locator("#output").fill(str(demo_output))
    frame.locator("#output").press("Enter")
    frame.locator("#output-line", has_text="never maintained").wait_for(timeout=30_000)
    output = frame.locator("#output-line").inner_text()
    assert "last batch run-two" in output and " files in 1 partitions, mean " in output, output

    # The lineage graph: a box per shard, an arrow per parent link, the open shards marked so.
    boxes = frame.locator("#lineage svg g.lineage-shard")
    assert boxes.count() == 7
    # The diamond's links: a split (2), a merge (2), the split's children merged back (2).
    assert frame.locator("#lineage svg path.lineage-edge").count() == 6
    assert frame.locator("#lineage svg g.lineage-shard.open").count() == 2
    assert frame.locator("#lineage svg g.lineage-shard.read").count() == 5
    # The runs chart: a bar per committed run, a lag point per run that knows its lag.
    assert frame.locator("#runs-chart svg rect.run-bar").count() == 2
    assert frame.locator("#runs-chart svg circle.run-lag").count() == 2
    about = frame.locator("#runs-chart svg rect.run-bar").nth(1).text_content()
    assert about is not None and about.startswith("run-two: 30 records (3 dead letters) on 2 shards"), about
    # Each run's dead letters: the red top of its bar.
    dead = frame.locator("#runs-chart svg rect.run-dead")
    assert [dead.nth(i).get_attribute("data-dead-letters") for i in range(dead.count())] == ["8", "3"]
    # A table of current state's run says what its changes did, as its bar's title (this stream
    # appends: its runs have none, so the page's own wording is checked here).
    said = frame.locator("body").evaluate("() => changeCounts({updated: 3, inserted: 1200, ignored: 2, expired: 0})")
    assert said == " (changes: 1,200 inserted, 3 updated, 2 ignored)", said
    assert about is not None and "changes" not in about
    page.screenshot(path=str(artifacts_dir / "airflow-ui-kinesis-consumers.png"), full_page=True)

    # The entry in Airflow's own navigation leads to the same page.
    page.goto(api_server)
    page.get_by_role("link", name="Kinesis consumers").click()
    page.frame_locator("iframe").locator("#shards tr[data-shard]").first.wait_for(timeout=60_000)
    context.close()


def test_the_fleet_shows_a_failed_stream_of_a_group_first_and_a_streams_link_opens_its_page(
    api_server: str, browser: Any, stream_mid_run: str, demo_output: Path, fleet_file: Path,
    streams: StreamFactory, tmp_path: Path, artifacts_dir: Path,
) -> None:  # fmt: skip
    broken = streams.create(shards=1)  # its output holds another format's table: its runs fail
    write_deltalake(str(tmp_path / "theirs"), pa.table({"a": [1]}))
    never = streams.create(shards=1)  # no run yet
    fleet_file.write_text(
        f'[[streams]]\nstream = "{stream_mid_run}"\noutput = "{demo_output}"\ndecode = "json"\n\n'
        f'[[streams]]\nstream = "{never}"\noutput = "{tmp_path / "never"}"\n\n'
        f'[[streams]]\nstream = "{broken}"\noutput = "{tmp_path / "theirs"}"\n\n'
        f'[[groups]]\nname = "clicks"\nstreams = ["{stream_mid_run}", "{broken}"]\n'
    )
    try:
        context, page = signed_in(browser, api_server)
        frame = page.frame_locator("iframe")
        rows = frame.locator("#fleet-streams tr[data-stream]")
        rows.first.wait_for(timeout=60_000)

        assert rows.count() == 3
        first = rows.first
        assert first.get_attribute("data-stream") == broken and first.get_attribute("data-failing") == "true"
        said = first.inner_text()
        assert "clicks" in said and "failing" in said and "delta" in said, said
        running = frame.locator(f'#fleet-streams tr[data-stream="{stream_mid_run}"]').inner_text()
        assert "clicks" in running and "running" in running and "run-two" in running, running
        assert "not run yet" in frame.locator(f'#fleet-streams tr[data-stream="{never}"]').inner_text()
        page.screenshot(path=str(artifacts_dir / "airflow-ui-fleet.png"))

        frame.get_by_role("link", name=stream_mid_run).click()  # today's page of that stream
        frame.locator("#shards tr[data-shard]").first.wait_for(timeout=60_000)
        assert frame.locator("#stream").input_value() == stream_mid_run
        frame.locator("#output-line", has_text="last batch run-two").wait_for(timeout=30_000)
        context.close()
    finally:
        fleet_file.unlink()


def test_an_anonymous_browser_gets_401_from_the_page_and_the_api(api_server: str, browser: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    for path in ("/kinesis-batch/", "/kinesis-batch/api/streams"):
        response = page.goto(f"{api_server}{path}")
        assert response is not None and response.status == 401, path
    context.close()
