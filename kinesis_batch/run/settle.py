"""Step 2, settle: the batches crashed runs left pending, before anything is read again.

For each lease with a pending batch that no live worker holds:
- the batch was published (the sink has its commit record): roll the checkpoint forward to the
  record's end for that shard;
- it was not: discard it, fenced (the sink's discard races a late publish by the old run, and
  exactly one of the two wins; if the publish won, roll forward after all) and clear pending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from kinesis_batch.checkpoints.store import DynamoDBCheckpointStore
from kinesis_batch.errors import KinesisBatchError, LeaseLostError
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.model import Lease, SettleFailure
from kinesis_batch.output.sink import Sink

ROLLED_FORWARD, DISCARDED, CLEARED = "rolled forward", "discarded", "cleared"
log = logging.getLogger(__name__)


def recover_pending(
    leases: Mapping[str, Lease],
    manager: LeaseManager,
    checkpoints: DynamoDBCheckpointStore,
    output: Sink,
    progress: Callable[[str], None] = lambda message: None,
) -> dict[str, str]:
    """Returns shard -> ROLLED_FORWARD | DISCARDED | CLEARED (its batch was published without it:
    nothing new was read there) for every lease it settled."""
    now = manager.now_ms()
    mine = (None, manager.worker_id)
    stuck = [
        lease
        for lease in leases.values()
        if lease.pending_batch_id and (lease.lease_owner in mine or not lease.is_live(now))
    ]
    if not stuck:
        return {}
    taken = manager.take(lease.lease_key for lease in stuck)
    outcome: dict[str, str] = {}
    try:
        for lease in taken.acquired:
            batch_id = str(lease.pending_batch_id)
            try:
                outcome[lease.lease_key] = _settle(lease.lease_key, batch_id, manager, checkpoints, output)
            except Exception as exc:
                _failed(manager, lease.lease_key, batch_id, exc)
                raise
    finally:
        manager.release([lease.lease_key for lease in taken.acquired])
    for key, result in sorted(outcome.items()):
        progress(f"recovered {key}: pending batch {result}")
    return outcome


def _failed(manager: LeaseManager, key: str, batch_id: str, exc: Exception) -> None:
    """Keep on the lease that settling ``batch_id`` failed once more, and why, for ``status``:
    a batch that keeps failing to settle holds its shard's checkpoint, which a quiet stream
    would otherwise hide. Best effort: the settling's own error is the one raised."""
    try:
        with manager.fenced(key) as settle:  # the manager's copy stays current: its release is fenced on it
            current = manager.lease(key)
            said = " ".join(f"{type(exc).__name__}: {exc}".split())
            failure = (current.settle_failure or SettleFailure(batch_id, 0, "")).again(batch_id, said)
            settle(manager.store.update_application_fields(current, {"settleFailure": failure.to_text()}))
    except KinesisBatchError as recording:
        log.warning("could not record that batch %s failed to settle on %s: %s", batch_id, key, recording)


def _settle(key: str, batch_id: str, manager: LeaseManager, checkpoints: DynamoDBCheckpointStore, output: Sink) -> str:
    record = output.committed(batch_id)
    if record is None and not output.discard(batch_id):
        record = output.committed(batch_id)  # the old run published just now
    shard = record.shard(key) if record else None
    with manager.fenced(key) as settle:
        current = manager.lease(key)
        if record is None or shard is None:
            settle(checkpoints.abort(current, batch_id))
            return DISCARDED if record is None else CLEARED
        if current.pending_checkpoint != shard.end:
            prepared = checkpoints.prepare(current, shard.end, batch_id)
            settle(prepared)
            if prepared is None:
                raise LeaseLostError(f"lost the lease of {key} while recovering batch {batch_id}")
            current = prepared
        settle(
            checkpoints.commit(
                current,
                batch_id,
                run_id=record.run_id,
                records=shard.records,
                lag_at_start_ms=shard.lag_at_start_ms,
                landing=shard.landing,
                cost=record.cost,
            )
        )
        return ROLLED_FORWARD


__all__ = ["CLEARED", "DISCARDED", "ROLLED_FORWARD", "recover_pending"]
