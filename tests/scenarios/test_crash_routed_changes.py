"""Crash safety of a routed stream of changes: one AWS DMS stream of a database's tables
(``--route-by metadata.table-name --changes dms``) into Delta on S3 (moto), each table of
current state keyed its own way (``--key id --key orders:order_id``). A first batch made the
``customers`` and ``orders`` tables; the second, with their later changes, deletes and
duplicates out of order, a ``refunds`` table appearing half-way and malformed records, is
killed -9 at each step: once its read made ``refunds``, before any publish, between the
commits of two tables, after every table, after the commit. Another worker's recovery
converges: every table equals its oracle (an independent fold of every change sent to it), no
key is in another table, each malformed record is once a dead letter, the batch's record counts
what its changes did in each table, nothing pending or staged."""

from __future__ import annotations

import json
import random
import subprocess
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import s3_settings
from kinesis_batch.config import RunConfig
from kinesis_batch.events import TABLE_PUBLISHED
from kinesis_batch.landing import total
from kinesis_batch.output import Output
from tests.changes.support import BASE_MILLIS, Sent, oracle, put_changes
from tests.crashes import (
    CRASHED,
    LEASE_SECONDS,
    died_at,
    each_converges,
    pending_batches,
    start_crashing,
)
from tests.output.support import read_rows, run_config
from tests.scenarios.test_crash_routed import recovers
from tests.scenarios.test_routed import routed_output, run
from tests.streams import StreamFactory

pytestmark = pytest.mark.isolated("kill -9")

STEPS = ("read", "staged", TABLE_PUBLISHED, "published", "committed")
ROUTING = ("--route-by", "metadata.table-name", "--changes", "dms", "--key", "id", "--key", "orders:order_id")
KEYS = {"customers": "id", "orders": "order_id", "refunds": "id"}
#: What the second batch did in each table: keys 0 and 3 deleted, the others updated (or new).
CHANGED = {
    "customers": {"updated": 4, "deleted": 2},
    "orders": {"updated": 4, "deleted": 2},
    "refunds": {"inserted": 4, "deleted": 2},
}
#: Records no table can take: not DMS's shape, and a table name that cannot name a table.
MALFORMED = [b'{"data": {"id": 1}}', json.dumps({"data": {"id": 2}, "metadata": {"table-name": "a b"}}).encode()]


def dms(table: str, key: int, version: int | None, millis: int) -> Sent:
    """A change of row ``key`` of ``table`` at ``millis``: its ``version`` (None: a delete).
    ``id`` is text in customers and a number in refunds, as a database's tables differ."""
    name = KEYS[table]
    value: Any = f"c-{key}" if table == "customers" else key
    row = None if version is None else {name: value, "version": version, "note": f"{table}-{key}-v{version}"}
    metadata = {
        "timestamp": datetime.fromtimestamp(millis / 1000, UTC).isoformat().replace("+00:00", "Z"),
        "record-type": "data",
        "operation": "delete" if version is None else ("insert" if version == 0 else "update"),
        "transaction-id": millis,
        "schema-name": "shop",
        "table-name": table,
    }
    body = {"data": row if row is not None else {name: value}, "metadata": metadata}
    return Sent(f"{table}/{key}", millis, row, json.dumps(body).encode())


def history(tables: tuple[str, ...], versions: range, seed: int) -> list[Sent]:
    """Each table's rows at ``versions``, every third deleted after its last, duplicated and out of order."""
    rng = random.Random(seed)
    sent = []
    for table in tables:
        for key in range(6):
            millis = BASE_MILLIS + key * 100_000
            sent += [dms(table, key, v, millis + v * 1000) for v in versions]
            if key % 3 == 0 and versions.stop > 2:
                sent.append(dms(table, key, None, millis + versions.stop * 1000))
    sent += rng.sample(sent, len(sent) // 8)
    rng.shuffle(sent)
    return sent


def config_of(stream: str, output: tuple[str, ...], worker_id: str) -> RunConfig:
    return run_config(
        stream,
        output,
        worker_id,
        lease_seconds=LEASE_SECONDS,
        read_limits="none",
        route_by="metadata.table-name",
        changes="dms",
        key="id;orders:order_id",
    )


def state_of(config: RunConfig, table: str) -> dict[str, dict[str, Any]]:
    """A table's rows by ``TABLE/KEY``, its own columns only."""
    sink = Output(config.format, config.output.replace("{route}", table), config.catalog)
    rows = read_rows(sink.open(app=config.table, stream=config.stream, s3=s3_settings()))
    name = KEYS[table]
    state = {}
    for i in range(len(rows.get(name, []))):
        key = rows[name][i] if table != "customers" else rows[name][i].removeprefix("c-")
        state[f"{table}/{key}"] = {column: rows[column][i] for column in (name, "version", "note")}
    assert len(state) == len(rows.get(name, [])), f"more than one row for a key of {table}"
    return state


@dataclass
class RoutedChangesCrash:
    step: str
    stream: str
    sent: list[Sent]
    output: tuple[str, ...]
    config: RunConfig
    process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        self.process = start_crashing(self.stream, self.output, self.step, *ROUTING)
        return self.process


def converges_after(crash: RoutedChangesCrash, spark: Any) -> None:
    died_at(crash.process, crash.step)
    sent = {table: [s for s in crash.sent if s.key.startswith(f"{table}/")] for table in KEYS}
    if crash.step == TABLE_PUBLISHED:  # customers, first by name, has the batch; refunds not yet
        assert state_of(crash.config, "customers") == oracle(sent["customers"])
        assert state_of(crash.config, "refunds") == {}

    recovers(crash.config, crash.step, spark)

    for table in KEYS:  # keys are TABLE/KEY: a change in another table would be a key too many
        assert state_of(crash.config, table) == oracle(sent[table]), table
    dead = crash.config.destination.dead_letter().open(app=crash.config.table, stream=crash.stream, s3=s3_settings())
    letters = Counter(bytes(d) for d in read_rows(dead).get("data", []))
    assert letters == Counter(MALFORMED), "each malformed record once in the dead letters"
    assert pending_batches(crash.stream) == {}
    sink = crash.config.open_sink(s3_settings())
    last = sink.last_batch()  # the second batch's, however it ended: its record counts each table's changes
    assert last is not None
    counted = total([shard.landing for shard in last.shards])
    assert counted is not None
    for table, merged in CHANGED.items():
        assert {kind: counted.table_changes[table].get(kind, 0) for kind in merged} == merged, table
    assert not sink.staging(CRASHED).exists(), "the crashed batch's staging was left"
    for table in KEYS:
        assert not sink.table(table).staging(CRASHED).exists(), f"the crashed batch's staging was left in {table}"  # type: ignore[attr-defined]


@pytest.mark.timeout(900)
def test_kill_9_at_any_step_of_a_routed_dms_run_converges_to_each_tables_oracle(
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    subtests: pytest.Subtests,
) -> None:
    crashes: list[RoutedChangesCrash] = []
    for index, step in enumerate(STEPS):
        name = streams.create(shards=2)
        output = routed_output("delta", "s3", tmp_path, monkeypatch)
        config = config_of(name, output, "first")
        first = history(("customers", "orders"), range(0, 2), seed=index)
        put_changes(kinesis, name, first)
        assert run(config, spark).published  # customers and orders exist before the crashing run
        second = history(("customers", "orders", "refunds"), range(2, 4), seed=index + 10)
        put_changes(kinesis, name, [*second, *(Sent(f"bad/{i}", 0, None, b) for i, b in enumerate(MALFORMED))])
        crashes.append(RoutedChangesCrash(step, name, first + second, output, config_of(name, output, "recoverer")))
    each_converges(crashes, lambda crash: converges_after(crash, spark), subtests)
