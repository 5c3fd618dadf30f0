"""Outputs written by the code before the composite sink (kinesis_batch.output.composite) are
continued by it exactly once: the code of commit BEFORE (its ``output/paired.py`` and
``output/routed.py``), taken from this clone's history, runs a first batch to the end and is
killed -9 in the middle of the second's publish; this code then recovers that batch and runs
on. Every record is once in its table or in the dead-letter output, so no table moved or is read
differently, and a batch staged by the code before is completed from its staging as it left it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.config import RunConfig
from kinesis_batch.events import TABLE_PUBLISHED
from tests.crashes import CRASHED, LEASE_SECONDS, SUBPROCESS_ARGS, SUBPROCESS_ENV, after_expiry, died_at
from tests.decoding.support import put_payloads
from tests.output.support import output_args, run_config
from tests.runs import REPO
from tests.scenarios.test_crash_decoded import landed, paired_sinks, payloads
from tests.scenarios.test_crash_routed import where_each_landed
from tests.scenarios.test_routed import event, routed_output, run
from tests.streams import StreamFactory, put

pytestmark = pytest.mark.isolated("a fresh environment of the code before")

#: The last commit of the sinks before the composite: a pair for one table and its dead letters,
#: a routed sink for a template's tables.
BEFORE = "99c5c0544e98fe1c5dc52967b61b934aba8afcec"
AFTER: dict[str, Any] = {"lease_seconds": LEASE_SECONDS, "read_limits": "none"}  # this code's runs


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package and its test helpers as they were at BEFORE, unpacked from git."""
    root = tmp_path_factory.mktemp("before")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", BEFORE, "kinesis_batch", "tests"], capture_output=True)
    assert archive.returncode == 0, f"commit {BEFORE[:7]} is not in this clone's history: {archive.stderr.decode()}"
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    assert (root / "kinesis_batch" / "output" / "paired.py").exists()
    return root


def start_before(before: Path, stream: str, output: tuple[str, ...], *options: str, crash_at: str | None = None) -> Any:
    """``kinesis-batch run`` of the code before, in its own tree (it comes first on the path of
    the driver and of Spark's workers), killing itself -9 at ``crash_at``."""
    run = ("run", "--stream", stream, *output, "--lease-seconds", str(LEASE_SECONDS), *SUBPROCESS_ARGS, *options)
    if crash_at is None:
        command = [sys.executable, "-m", "kinesis_batch.cli", *run, "--worker-id", "before"]
    else:
        command = [sys.executable, "-m", "tests.faultpoints", "crash", crash_at, *run]
        command += ["--worker-id", "crasher", "--run-id", CRASHED]
    env = {**os.environ, **SUBPROCESS_ENV, "PYTHONPATH": str(before)}
    return subprocess.Popen(
        command, env=env, cwd=before, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def ran_before(before: Path, stream: str, output: tuple[str, ...], *options: str) -> None:
    process = start_before(before, stream, output, *options)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-2000:]


def test_the_code_before_runs_from_its_own_tree(before: Path) -> None:
    """What these tests start is the old code, not this checkout's."""
    where = subprocess.run(
        [sys.executable, "-c", "import kinesis_batch.output.paired as p; print(p.__file__)"],
        env={**os.environ, "PYTHONPATH": str(before)},
        cwd=before,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip() == str(before / "kinesis_batch" / "output" / "paired.py")


@pytest.mark.timeout(600)
def test_a_table_and_its_dead_letters_written_before_are_continued_exactly_once(
    before: Path, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=2)
    output = output_args("delta", "local", tmp_path, monkeypatch)
    table, dead = paired_sinks(output, name)
    sent = put_payloads(kinesis, name, payloads(40))
    ran_before(before, name, output, "--decode", "json")  # a whole batch, published and committed
    sent += put_payloads(kinesis, name, payloads(80)[40:])
    crashed = start_before(before, name, output, "--decode", "json", crash_at="dead_letters_published")
    died_at(crashed, "dead_letters_published")

    config: RunConfig = run_config(name, output, "after", **AFTER, decode="json")
    recovery = run(config, spark, clock=after_expiry)
    assert set(recovery.recovered.values()) == {"rolled forward"}, recovery.recovered
    sent += put_payloads(kinesis, name, payloads(120)[80:])
    assert run(config, spark).published

    got = landed(table, dead)
    assert [payload for payload, n in got.items() if n > 1] == [], "a record twice"
    assert Counter(got) == Counter(sent), f"missing {len(set(sent) - set(got))}, extra {len(set(got) - set(sent))}"


@pytest.mark.timeout(600)
def test_a_templates_tables_written_before_are_continued_exactly_once(
    before: Path, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=2)
    output = routed_output("delta", "local", tmp_path, monkeypatch)
    routed = ("--decode", "json", "--route-by", "type")
    second = ["click", "view", None, "buy", "view", "buy!"]  # None: no route; "buy!": cannot name a table
    put(kinesis, name, 20, payload=lambda i: event(i, "click"))
    ran_before(before, name, output, *routed)  # the click table, and the record of the stream's tables
    put(kinesis, name, 60, start=20, payload=lambda i: event(i, second[i % len(second)]))
    crashed = start_before(before, name, output, *routed, crash_at=TABLE_PUBLISHED)  # new tables, one committed
    died_at(crashed, TABLE_PUBLISHED)

    config = run_config(name, output, "after", **AFTER, decode="json", route_by="type")
    recovery = run(config, spark, clock=after_expiry)
    assert set(recovery.recovered.values()) == {"rolled forward"}, recovery.recovered
    assert config.open_sink().known == {"buy", "click", "view"}, "the tables the code before made, as it recorded them"
    put(kinesis, name, 20, start=80, payload=lambda i: event(i, "click" if i % 2 else "view"))
    assert run(config, spark).published

    kinds = {i: "click" for i in range(20)} | {i: second[i % len(second)] for i in range(20, 80)}
    kinds |= {i: "click" if i % 2 else "view" for i in range(80, 100)}
    found = where_each_landed(config)
    assert [key for key, count in found.items() if count > 1] == [], "a record twice"
    expected = {n: kind if kind in ("click", "view", "buy") else "dead letter" for n, kind in kinds.items()}
    assert dict(found.keys()) == expected
