"""Step 3, lease: take the planned shards' leases, plan again from the leases as taken, mark
each held lease with the batch, and write the plan where the later steps find it.

- Shards leased by a live worker elsewhere are skipped and reported, never taken.
- The plan is made again after the take: another run may have committed (and released) a shard
  between the survey and the take, and its old checkpoint would read records twice. Leases the
  second plan does not need are released at once.
- Every lease is marked with the batch (``pendingBatchId``) in the fenced write that takes it,
  before anything is read, so a crash from here on leaves a batch that recovery settles.
"""

from __future__ import annotations

from collections.abc import Mapping

from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.leases.model import Lease
from kinesis_batch.planning import RunPlan, plan_to_json
from kinesis_batch.run.context import RunContext
from kinesis_batch.run.survey import plan_for
from kinesis_batch.shards.lineage import Lineage


def take(
    context: RunContext, lineage: Lineage, leases: Mapping[str, Lease], decode: DecodeSpec | None = None
) -> tuple[RunPlan, dict[str, str]]:
    """Returns (the plan as leased, shards leased elsewhere -> owner). The plan, with what the
    start resolved of the decoding (``decode``), is the manifest the later steps read."""
    manager = context.manager
    plan = plan_for(context, lineage, leases)
    created = manager.ensure_leases(plan.new_leases)
    surveyed = {**leases, **{lease.lease_key: lease for lease in created}}
    taken = manager.take(plan.shard_ids, pending_batch=context.run_id, current=surveyed)
    # The leases as the take read them and the taken ones as it left them; after a lost race,
    # as they are now (the race's winner holds what the take did not).
    seen = context.store.list_leases() if taken.lost_race or taken.missing else taken.seen.values()
    plan = plan_for(context, lineage, {lease.lease_key: lease for lease in [*seen, *taken.acquired]})
    unneeded = [key for key in manager.held() if key not in set(plan.shard_ids)]
    manager.write_each(unneeded, lambda lease: context.checkpoints.abort(lease, context.run_id))
    manager.release(unneeded)
    elsewhere = {**plan.leased_elsewhere, **taken.held_elsewhere}
    elsewhere.update({key: "(lost race)" for key in taken.lost_race})
    bound = plan.until.isoformat() if plan.until else "the tip"
    context.progress(
        f"plan: {len(plan.ranges)} shards in {len(plan.waves())} waves, {len(plan.finished)} finished, "
        f"{len(elsewhere)} leased elsewhere, {len(plan.waiting)} waiting for parents; bound {bound}"
    )
    # A lease recovery took before (settle.py) that the take did not mark is marked now; where
    # the batch ends is not known yet.
    unmarked = sorted(key for key, lease in manager.held().items() if lease.pending_batch_id != context.run_id)
    manager.write_each(unmarked, lambda lease: context.checkpoints.prepare(lease, lease.checkpoint, context.run_id))
    manifest = plan_to_json(plan) | ({"decode": decode.to_json()} if decode else {})
    context.output.write_manifest(context.run_id, manifest)
    return plan, elsewhere


__all__ = ["take"]
