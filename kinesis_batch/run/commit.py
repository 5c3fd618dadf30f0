"""Step 6, commit: the published batch's checkpoints move, fenced, parents' generations first.

A generation (the shards whose parents in the batch moved before) moves side by side, as many
DynamoDB transactions in flight as ``config.commit_concurrency`` says; each appends the move
to the history and releases the lease in the same transaction (the run is done with the
shard). Held shards the batch does not cover have their marker cleared. Idempotent: a shard
already moved (by an earlier attempt of this step) is not moved again.
"""

from __future__ import annotations

from kinesis_batch.control.waiting import Waited
from kinesis_batch.planning import generations
from kinesis_batch.run.context import RunContext
from kinesis_batch.storage.records import CommitRecord


def commit(context: RunContext, record: CommitRecord | None) -> int:
    """``record``: the run's batch's commit record, as its output holds it (None: nothing was
    published). Returns how many checkpoints moved."""
    manager, checkpoints, batch_id = context.manager, context.checkpoints, context.run_id
    manager.adopt()
    by_shard = {commit.shard_id: commit for commit in (record.shards if record else ())}
    met = context.control_plane_waited()
    control_plane = met if met != Waited() else None  # most runs met nothing: their entries say nothing
    held = manager.held()
    moved = _moved_before(context, [shard for shard in by_shard if shard not in held])
    parents = {shard: held[shard].parent_shard_ids for shard in by_shard if shard in held}
    for generation in generations([shard for shard in by_shard if shard not in moved], parents):
        manager.write_each(
            generation,
            lambda lease: checkpoints.commit(
                lease,
                batch_id,
                run_id=context.run_id,
                records=by_shard[lease.lease_key].records,
                lag_at_start_ms=by_shard[lease.lease_key].lag_at_start_ms,
                landing=by_shard[lease.lease_key].landing,
                cost=record.cost if record else None,
                control_plane=control_plane,
                release=True,
            ),
            concurrency=context.config.commit_concurrency,
        )
    uncovered = sorted(set(manager.held()) - set(by_shard))
    manager.write_each(uncovered, lambda lease: checkpoints.abort(lease, batch_id))
    context.emit("committed")
    return len(by_shard)


def _moved_before(context: RunContext, shards: list[str]) -> set[str]:
    """Of the batch's shards this worker does not hold, the ones an earlier attempt of this step
    moved (and released); the others are lost, and the commit says so (LeaseLostError)."""
    leases = [context.store.get_lease(shard) for shard in shards]
    return {lease.lease_key for lease in leases if lease and lease.last_batch_id == context.run_id}


__all__ = ["commit"]
