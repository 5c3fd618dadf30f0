"""Step 5, publish: the batch becomes visible in the output's one atomic step, with its commit
record, and only if every lease is still this run's.

- Each shard's end is recorded on its lease first (``pendingCheckpoint``, fenced), so that a
  crash after the publish leaves what recovery needs to roll the checkpoints forward.
- That write also renews the lease, which proves it is still ours at that moment (the held
  leases with no end are renewed on their own); a lost one ends the run (LeaseLostError)
  before anything is published. Fencing in the sink covers the rest:
  a publish after another worker's recovery discarded the batch fails (kinesis_batch.output).
- A decoding run publishes its dead letters and then the table (kinesis_batch.output.composite);
  each shard's commit carries what its records became (kinesis_batch.landing).
- Idempotent: a retried publish of a batch that is in the output commits nothing.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from kinesis_batch.landing import Landing
from kinesis_batch.planning import shard_commit
from kinesis_batch.run import job_run
from kinesis_batch.run.context import RunContext
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import files_of, staged


def publish(context: RunContext) -> bool:
    """False when there was nothing new to publish (the staging is removed, no empty batch)."""
    output, batch_id, manager = context.output, context.run_id, context.manager
    if output.committed(batch_id) is not None:
        context.emit("published")
        return True  # a retried publish step: the batch (and its bookkeeping) is already in
    manager.adopt()
    plan = context.manifest("before publishing")
    results = staged(output.results(batch_id))
    # In plan order, so parents come before their children in the record and the commits.
    commits = [
        replace(moved, landing=Landing.of(results[r.shard_id].counts) if results[r.shard_id].counts else None)
        for r in plan.ranges
        if r.shard_id in results and (moved := shard_commit(r, results[r.shard_id].read)) is not None
    ]
    ends = {commit.shard_id: commit.end for commit in commits}
    manager.write_each(
        ends,
        lambda lease: context.checkpoints.prepare(
            lease, ends[lease.lease_key], batch_id, read_through=ends[lease.lease_key], renew_until_ms=manager.expiry()
        ),
    )
    lost = manager.lost_leases() | set(manager.renew(set(manager.held()) - set(ends)))
    if lost:
        raise context.lost(lost, "before publishing")
    if not commits:
        # The job ran but found nothing new: no empty batch. No fence either: this run holds its
        # leases (just checked) and will not publish the batch later.
        output.discard(batch_id, fence=False)
        context.emit("published")
        return False
    stream, cost = context.config.stream, job_run.cost(context)
    record = CommitRecord(batch_id, context.run_id, stream, datetime.now(UTC), tuple(commits), cost=cost)
    files = files_of(results)  # the results read above: the staging is read once
    context.emit("staged")
    published = output.publish(record, files) or output.committed(batch_id) is not None
    context.emit("published")
    return published


__all__ = ["publish"]
