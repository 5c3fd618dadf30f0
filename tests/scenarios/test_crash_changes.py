"""Crash safety of a table of current state: kill -9 a ``--changes dynamodb`` run at each step
(between the dead letters' publish and the merge too), into Delta on S3 (moto) and Iceberg;
another worker's recovery converges to exactly the state an independent fold of every change
computes (tests.changes.support.oracle), each malformed record once in the dead letters."""

from __future__ import annotations

import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.events import RUN_STEPS, TABLE_PUBLISHED
from kinesis_batch.output import Sink
from kinesis_batch.run import CatchUpRun
from tests.changes.support import Sent, oracle, put_changes, shuffled_history, table_state
from tests.crashes import (
    CRASHED,
    LEASE_SECONDS,
    after_expiry,
    died_at,
    each_converges,
    pending_batches,
    start_crashing,
)
from tests.output.support import output_args, read_rows, run_config
from tests.scenarios.test_crash_decoded import paired_sinks
from tests.streams import StreamFactory

pytestmark = pytest.mark.isolated("kill -9")

STEPS = tuple(s for s in RUN_STEPS[1:] if s != TABLE_PUBLISHED)  # every step once the leases are taken (none routed)
KINDS = [("delta", "s3"), ("iceberg", "local")]  # each format merges its own way
MALFORMED = [Sent(f"bad-{i}", 0, None, f'{{"eventName": "INSERT", "n": {i}}}'.encode()) for i in range(3)]


@dataclass
class ChangeCrash:
    step: str
    stream: str
    sent: list[Sent]
    output: tuple[str, ...]
    table: Sink
    dead: Sink
    process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        self.process = start_crashing(self.stream, self.output, self.step, "--changes", "dynamodb")
        return self.process

    def catch_up(self, spark: Any, worker_id: str) -> None:
        config = run_config(
            self.stream, self.output, worker_id, lease_seconds=LEASE_SECONDS, read_limits="none", changes="dynamodb"
        )
        kinesis, dynamodb = kinesis_client(), dynamodb_client()
        CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark, clock=after_expiry).run()


def converges_after(crash: ChangeCrash, spark: Any) -> None:
    died_at(crash.process, crash.step)
    if crash.step in ("reading", "read", "staged", "dead_letters_published"):
        assert read_rows(crash.table) == {}, "no change may be applied before the merge"
    crash.catch_up(spark, "recoverer")
    assert table_state(read_rows(crash.table)) == oracle(crash.sent)
    letters = Counter(bytes(d) for d in read_rows(crash.dead).get("data", []))
    assert letters == Counter(bad.body for bad in MALFORMED), "each malformed record once in the dead letters"
    assert pending_batches(crash.stream) == {}
    assert not crash.table.staging(CRASHED).exists(), "the crashed batch's staging was left"


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_kill_9_at_any_step_of_a_changes_run_converges_to_the_oracles_state(
    format: str,
    where: str,
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    subtests: pytest.Subtests,
) -> None:
    crashes: list[ChangeCrash] = []
    for step in STEPS:
        name = streams.create(shards=2)
        sent = shuffled_history(12, 3, seed=len(crashes))
        put_changes(kinesis, name, [*sent, *MALFORMED])
        output = output_args(format, where, tmp_path, monkeypatch)
        table, dead = paired_sinks(output, name)
        crashes.append(ChangeCrash(step, name, sent, output, table, dead))
    each_converges(crashes, lambda crash: converges_after(crash, spark), subtests)
