"""Crash safety of decoding runs, whose batch goes to two outputs: kill -9 the whole run at each
step, between the two publishes too, into Delta on S3 (moto) with its dead-letter output;
another worker's recovery converges to exactly once in both: the table's rows plus the
dead-letter rows are the records put, each once."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.config import RunConfig
from kinesis_batch.output import Sink
from kinesis_batch.parsers import default_table
from kinesis_batch.run import CatchUpRun, RunReport
from tests.crashes import (
    CRASHED,
    LEASE_SECONDS,
    after_expiry,
    died_at,
    each_converges,
    pending_batches,
    start_crashing,
)
from tests.decoding.support import dead_letter_args, put_payloads
from tests.output.support import output_args, read_rows, run_config, sink_of
from tests.streams import StreamFactory

pytestmark = pytest.mark.isolated("kill -9")

#: The steps where a batch of two outputs differs from one of one (tests/scenarios/test_crash.py
#: kills an appending run at every step, test_crash_changes.py a run with two outputs): before
#: either publish, between the two, after both.
STEPS = ("staged", "dead_letters_published", "published")
#: Delta on S3: a paired publish is the same over any format (kinesis_batch.output.composite), and
#: each format's own steps are killed in test_crash.py (Iceberg's also in test_crash_changes.py
#: and test_crash_routed.py).
KINDS = [("delta", "s3")]


def paired_sinks(output: tuple[str, ...], stream: str) -> tuple[Sink, Sink]:
    """The table and the dead-letter output a decoding run of ``stream`` publishes to."""
    app = default_table(stream)
    return sink_of(output, app=app, stream=stream), sink_of(dead_letter_args(output), app=app, stream=stream)


def payloads(count: int) -> list[bytes]:
    """Events, every seventh record malformed and every eleventh no object: both outputs get rows."""
    made = []
    for i in range(count):
        if i % 7 == 3:
            made.append(f"{{broken {i}".encode())
        elif i % 11 == 5:
            made.append(f"[{i}]".encode())
        else:
            made.append(json.dumps({"id": i, "user": {"name": f"u{i}"}}).encode())
    return made


@dataclass
class DecodedCrash:
    step: str
    stream: str
    sent: list[bytes]
    output: tuple[str, ...]
    table: Sink
    dead: Sink
    process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        self.process = start_crashing(self.stream, self.output, self.step, "--decode", "json")
        return self.process


def catch_up(spark: Any, crash: DecodedCrash, worker_id: str) -> RunReport:
    config: RunConfig = run_config(
        crash.stream,
        crash.output,
        worker_id,
        lease_seconds=LEASE_SECONDS,
        read_limits="none",
        decode="json",
    )
    run = CatchUpRun(
        config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark, clock=after_expiry
    )
    return run.run()


def landed(table: Sink, dead: Sink) -> Counter[bytes]:
    """Every record in either output, as the payload it was put as (a row is its event again)."""
    rows, letters = read_rows(table), read_rows(dead)
    events = [
        json.dumps({"id": i, "user": u}).encode() for i, u in zip(rows.get("id", []), rows.get("user", []), strict=True)
    ]
    return Counter(events) + Counter(bytes(d) for d in letters.get("data", []))


def converges_after(crash: DecodedCrash, spark: Any) -> None:
    died_at(crash.process, crash.step)
    if crash.step in ("reading", "read", "staged"):
        assert read_rows(crash.table) == {} and read_rows(crash.dead) == {}, "nothing may be visible before publish"
    if crash.step == "dead_letters_published":
        assert read_rows(crash.table) == {} and read_rows(crash.dead) != {}, "the crash came between the publishes"
    recovery = catch_up(spark, crash, "recoverer")
    outcomes = set(recovery.recovered.values())
    if crash.step in ("dead_letters_published", "published"):
        assert "rolled forward" in outcomes, outcomes
    elif crash.step != "committed":
        assert outcomes == {"discarded"}, outcomes

    got = landed(crash.table, crash.dead)
    assert not [p for p, n in got.items() if n > 1], "a record twice"
    assert set(got) == set(crash.sent), (
        f"missing {len(set(crash.sent) - set(got))}, extra {len(set(got) - set(crash.sent))}"
    )
    assert pending_batches(crash.stream) == {}
    for sink in (crash.table, crash.dead):
        assert not sink.staging(CRASHED).exists(), f"the crashed batch's staging was left in {sink.uri}"


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_kill_9_at_any_step_of_a_decoding_run_converges_to_each_record_once_in_the_table_or_the_dead_letters(
    format: str,
    where: str,
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    subtests: pytest.Subtests,
) -> None:
    crashes: list[DecodedCrash] = []
    for step in STEPS:
        name = streams.create(shards=2)
        sent = put_payloads(kinesis, name, payloads(80))
        output = output_args(format, where, tmp_path, monkeypatch)
        table, dead = paired_sinks(output, name)
        crashes.append(DecodedCrash(step, name, sent, output, table, dead))
    each_converges(crashes, lambda crash: converges_after(crash, spark), subtests)
