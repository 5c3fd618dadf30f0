"""A reset starts a consumer over: every old checkpoint recorded in the history, each shard's
lease made again at the start, the table marked for the stream as it is now. It refuses while a
consumer holds a lease, and a table that does not exist, having changed nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import InvalidStateError, LeaseTableNotFoundError
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.ownership import read_mark
from kinesis_batch.parsers import default_table
from kinesis_batch.reset import reset
from kinesis_batch.run import CatchUpRun
from kinesis_batch.shards.checkpoint import Checkpoint
from tests.streams import StreamFactory, put


def caught_up(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> tuple[str, LeaseStore]:
    """A 2-shard stream whose consumer read its 20 records: its checkpoints are sequence numbers."""
    name = streams.create(shards=2)
    put(kinesis, name, 20)
    config = RunConfig.of(stream=name, output=str(tmp_path / "out"), worker_id="run-worker")
    assert CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark).run().records == 20
    return name, LeaseStore(dynamodb, default_table(name))


def test_a_reset_records_every_old_checkpoint_then_starts_each_shard_over_and_marks_the_table(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    stream, store = caught_up(kinesis, dynamodb, streams, spark, tmp_path)
    before = {lease.lease_key: lease.checkpoint for lease in store.list_leases()}

    report = reset(kinesis, store, stream, Checkpoint.latest(), who="ops@host")

    assert (report.recorded, report.shards) == (2, 2)
    assert {lease.lease_key: lease.checkpoint for lease in store.list_leases()} == dict.fromkeys(
        before, Checkpoint.latest()
    )
    history = HistoryTable(dynamodb, store.table_name)
    recorded = {e.lease_key: (e.from_checkpoint, e.owner) for e in history.for_run(report.reset_id)}
    assert recorded == {key: (checkpoint, "reset by ops@host") for key, checkpoint in before.items()}
    mark = read_mark(history)
    assert mark is not None and mark.marked_by == "reset by ops@host" and mark.output is None
    assert report.line().startswith(f"reset {store.table_name}: 2 old checkpoints recorded in the history")


def test_a_reset_is_refused_while_a_consumer_holds_a_lease_and_changes_nothing(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    stream, store = caught_up(kinesis, dynamodb, streams, spark, tmp_path)
    held = sorted(lease.lease_key for lease in store.list_leases())[0]
    LeaseManager(store, "running-consumer", 600).take([held])
    before = store.list_leases()

    with pytest.raises(InvalidStateError, match=f"{held} of {store.table_name} is leased by running-consumer"):
        reset(kinesis, store, stream, Checkpoint.trim_horizon(), who="ops@host")

    assert store.list_leases() == before


def test_a_reset_of_a_table_that_does_not_exist_is_refused(kinesis: Any, dynamodb: Any, streams: StreamFactory) -> None:
    name = streams.create(shards=1)
    with pytest.raises(LeaseTableNotFoundError, match="there is nothing to reset"):
        reset(kinesis, LeaseStore(dynamodb, default_table(name)), name, Checkpoint.latest(), who="ops@host")
