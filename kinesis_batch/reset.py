"""Start a consumer over: every checkpoint of its lease table set to one start, the old ones kept
in the history. The way out for a stream deleted and created again (the table's checkpoints are
the old stream's) and for a deliberate restart. Never implicit: the command line asks for
``--yes``; nothing else calls it.

What it does, in order, so that running it again after a crash finishes the job:

1. checks the table is this stream's (a recreated stream is allowed: that is what it is for);
   refuses while any lease is held live (a consumer is running);
2. records every old checkpoint in the history (run ``reset-<time>``, owner ``reset by WHO``);
3. deletes the old lease items, each as it was read (a consumer that took one meanwhile wins);
4. creates a lease per shard of the stream at the start, as a first run would;
5. marks the table for this stream's incarnation.

The output is not touched: batches published before stay where they are.
"""

from __future__ import annotations

import getpass
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kinesis_batch import ownership
from kinesis_batch.checkpoints.history import HistoryEntry, HistoryTable
from kinesis_batch.errors import InvalidStateError, LeaseTableNotFoundError
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.planning import plan_run
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient


def operator() -> str:
    """Who is doing this, for the history: the user and the host."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


@dataclass(frozen=True)
class ResetReport:
    table: str
    stream: str
    start: Checkpoint
    reset_id: str  # the history's run id of the reset
    recorded: int  # old checkpoints recorded in the history
    shards: int  # leases created at the start

    def line(self) -> str:
        return (
            f"reset {self.table}: {self.recorded} old checkpoints recorded in the history as run {self.reset_id}; "
            f"{self.shards} shards of stream {self.stream} now start at {self.start}"
        )


def reset(
    kinesis: KinesisClient,
    store: LeaseStore,
    stream: str,
    start: Checkpoint,
    *,
    who: str,
    clock: Callable[[], float] = time.time,
) -> ResetReport:
    claim = ownership.check(kinesis, store, stream, recreated_ok=True)
    if not store.table_exists():
        raise LeaseTableNotFoundError(f"lease table {store.table_name} does not exist: there is nothing to reset")
    leases = store.list_leases()
    now_ms = int(clock() * 1000)
    live = sorted((lease.lease_key, str(lease.lease_owner)) for lease in leases if lease.is_live(now_ms))
    if live:
        shard, owner = live[0]
        raise InvalidStateError(
            f"{shard} of {store.table_name} is leased by {owner} (and {len(live) - 1} more shards): a consumer is "
            "running; stop it, or let its leases lapse, and reset again"
        )
    now = datetime.fromtimestamp(now_ms / 1000, UTC)
    reset_id = f"reset-{now:%Y%m%dT%H%M%SZ}"
    history = HistoryTable(store.client, store.table_name)
    history.create_if_not_exists()
    for lease in leases:  # what was there, who replaced it and when, before anything goes
        entry = HistoryEntry(
            lease.lease_key, reset_id, reset_id, f"reset by {who}", now, lease.checkpoint, start, 0,
            lease_counter=lease.lease_counter,
        )  # fmt: skip
        history.record(entry)
    changed = [lease.lease_key for lease in leases if not store.delete_lease_as_seen(lease)]
    if changed:
        raise InvalidStateError(
            f"{', '.join(changed)} of {store.table_name} changed while resetting (a consumer started?): stop it and "
            "reset again; the checkpoints read so far are in the history"
        )
    lineage = Lineage.build(list_shards(kinesis, stream))
    plan = plan_run(stream, lineage, {}, worker_id="", now_ms=now_ms, initial=start)
    created = sum(store.create_lease_if_not_exists(lease) for lease in plan.new_leases)
    if not ownership.remark(store, claim, f"reset by {who}"):
        raise InvalidStateError(f"the mark of {store.table_name} changed while resetting: reset again")
    return ResetReport(store.table_name, stream, start, reset_id, len(leases), created)


__all__ = ["ResetReport", "operator", "reset"]
