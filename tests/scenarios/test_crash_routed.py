"""Crash safety of a routed run (``--route-by``), whose batch goes to many tables: a first batch
made the ``click`` table; the second, with ``view`` and ``buy`` new to it and records no route
can name, is killed -9 at each step: while its tasks write into the click table, once its read
made the new tables and moved their files in, before any publish, between the commits of two
tables, after every table, after the commit, into Iceberg. Another worker's recovery
converges: every table holds exactly its kind's records, the dead-letter output the rest, no
record in two places, nothing pending, staged or left in a table by the discarded batch."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import s3_settings
from kinesis_batch.config import RunConfig
from kinesis_batch.events import TABLE_PUBLISHED
from kinesis_batch.output import Output
from tests.crashes import (
    CRASHED,
    LEASE_SECONDS,
    after_expiry,
    died_at,
    each_converges,
    pending_batches,
    start_crashing,
)
from tests.output.support import read_rows, run_config
from tests.scenarios.test_routed import event, routed_output, run
from tests.streams import StreamFactory, put

pytestmark = pytest.mark.isolated("kill -9")

STEPS = ("reading", "read", "staged", TABLE_PUBLISHED, "published", "committed")
#: Iceberg: the table-by-table publish, completion and fencing are proven on every format in
#: tests/output/test_composite.py; this proves the whole run's steps on one.
KINDS = [("iceberg", "local")]
FIRST = ["click"]  # the first batch's kind: its table exists when the crashing run reads
SECOND = ["click", "view", None, "buy", "view", "buy!"]  # None: no route; "buy!": cannot name a table


@dataclass
class RoutedCrash:
    step: str
    stream: str
    kinds: dict[int, str | None]  # every record's kind, by its n
    config: RunConfig
    output: tuple[str, ...]
    process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        self.process = start_crashing(self.stream, self.output, self.step, "--decode", "json", "--route-by", "type")
        return self.process


def settings(stream: str, output: tuple[str, ...], worker_id: str) -> RunConfig:
    return run_config(
        stream, output, worker_id, lease_seconds=LEASE_SECONDS, read_limits="none", decode="json", route_by="type"
    )


def rows_of(config: RunConfig, output: str) -> dict[str, list[Any]]:
    sink = Output(config.format, output, config.catalog).open(app=config.table, stream=config.stream, s3=s3_settings())
    return read_rows(sink)


def where_each_landed(config: RunConfig) -> Counter[tuple[int, str]]:
    """(n, table or "dead letter") of every row and dead letter, counted."""
    found: Counter[tuple[int, str]] = Counter()
    for kind in ("click", "view", "buy"):
        found.update((n, kind) for n in rows_of(config, config.output.replace("{route}", kind)).get("n", []))
    dead = rows_of(config, config.destination.dead_letter().output)
    found.update((json.loads(data)["n"], "dead letter") for data in dead.get("data", []))
    return found


def recovers(config: RunConfig, step: str, spark: Any) -> None:
    """Another worker, once the crashed run's leases expired, settles its batch as the ``step``
    it died at says (rolled forward once a table has it, else discarded); one more run reads
    whatever the recovery left."""
    recovery = run(config, spark, clock=after_expiry)
    outcomes = set(recovery.recovered.values())
    if step in (TABLE_PUBLISHED, "published"):
        assert "rolled forward" in outcomes, outcomes
    elif step != "committed":
        assert outcomes == {"discarded"}, outcomes
    run(config, spark)


def converges_after(crash: RoutedCrash, spark: Any) -> None:
    died_at(crash.process, crash.step)
    if crash.step == TABLE_PUBLISHED:  # the first table in route order has the batch, the others not yet
        assert len(rows_of(crash.config, crash.config.output.replace("{route}", "buy")).get("n", [])) > 0
        assert len(rows_of(crash.config, crash.config.output.replace("{route}", "click")).get("n", [])) == 20

    recovers(crash.config, crash.step, spark)

    landed = where_each_landed(crash.config)
    assert [key for key, count in landed.items() if count > 1] == [], "a record twice"
    assert len({n for n, _ in landed}) == len(landed), "a record in two places"
    expected = {n: kind if kind in ("click", "view", "buy") else "dead letter" for n, kind in crash.kinds.items()}
    assert dict(landed.keys()) == expected
    assert pending_batches(crash.stream) == {}
    sink = crash.config.open_sink(s3_settings())
    assert not sink.staging(CRASHED).exists(), "the crashed batch's staging was left"
    for kind in ("buy", "click", "view"):
        table = sink.table(kind)
        assert not table.staging(CRASHED).exists(), f"the crashed batch's staging was left in {kind}"
        if crash.step in ("reading", "read", "staged"):  # discarded: its files too, named by a result or not
            assert not table.data(CRASHED).exists(), f"the discarded batch's files were left in {kind}"


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_kill_9_at_any_step_of_a_routed_run_converges_to_each_record_once_in_its_table_or_the_dead_letters(
    format: str,
    where: str,
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    subtests: pytest.Subtests,
) -> None:
    crashes: list[RoutedCrash] = []
    for step in STEPS:
        name = streams.create(shards=2)
        output = routed_output(format, where, tmp_path, monkeypatch)
        config = settings(name, output, "first")
        put(kinesis, name, 20, payload=lambda i: event(i, FIRST[0]))
        assert run(config, spark).published  # the click table exists before the crashing run
        put(kinesis, name, 60, start=20, payload=lambda i: event(i, SECOND[i % len(SECOND)]))
        kinds = {i: "click" for i in range(20)} | {i: SECOND[i % len(SECOND)] for i in range(20, 80)}
        crashes.append(RoutedCrash(step, name, kinds, settings(name, output, "recoverer"), output))
    each_converges(crashes, lambda crash: converges_after(crash, spark), subtests)
