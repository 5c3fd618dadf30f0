"""Seeding a backfill's own lease table at its start checkpoints, before its run starts."""

from __future__ import annotations

from collections.abc import Iterable

from kinesis_batch import defaults, ownership
from kinesis_batch.backfill.plan import Backfill
from kinesis_batch.backfill.starts import start_checkpoints
from kinesis_batch.binding import Outputs
from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.run import CatchUpRun
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards


def seed_backfill(run: CatchUpRun, plan: Backfill, *, start: str, shards: Iterable[str] = ()) -> dict[str, str]:
    """Create ``run``'s own lease table at the start checkpoints of the selected ``shards`` (all
    when empty): ``start`` is ``trim_horizon``, ``at_timestamp=ISO8601``, ``run=RUN_ID`` (the
    main checkpoints before that run, from the main table's history) or ``after_sequence=N``.
    Returns shard -> start checkpoint. Checks every value before creating anything; creating is
    idempotent (a retried seed changes nothing)."""
    stream = run.config.stream_id
    main = LeaseStore(run.store.client, plan.main_table)
    ownership.check(run.kinesis, main, stream)  # its history is read: it must be this stream's
    claim = ownership.check(run.kinesis, run.store, stream)
    lineage = Lineage.build(list_shards(run.kinesis, stream))
    history = HistoryTable(main.client, main.table_name) if main.table_exists() else None
    starts = start_checkpoints(start or defaults.BACKFILL_START, lineage, list(shards) or lineage.order, history)
    run.checkpoints.create_checkpoint_store_if_not_exists()
    outputs = Outputs.of(run.config)
    run.claim = ownership.mark(run.store, claim, run.progress, outputs=(outputs.output, outputs.dead_letter_output))
    seed(run.store, lineage, starts)
    return {shard: str(checkpoint) for shard, checkpoint in starts.items()}


def seed(store: LeaseStore, lineage: Lineage, starts: dict[str, Checkpoint]) -> int:
    """Create the backfill's lease items at their start checkpoints; shards not selected are
    marked finished so they neither get read nor block their children."""
    created = 0
    for shard_id in lineage.order:
        checkpoint = starts.get(shard_id, Checkpoint.shard_end())
        lease = Lease(
            shard_id,
            checkpoint=checkpoint,
            parent_shard_ids=frozenset(lineage.shards[shard_id].parent_ids),
            lineage_depth=lineage.depth(shard_id),
        )
        created += store.create_lease_if_not_exists(lease)
    return created


__all__ = ["seed", "seed_backfill"]
