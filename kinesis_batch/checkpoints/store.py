"""Checkpoints, kept on the lease items (as the KCL keeps them), moved in two phases.

:class:`CheckpointStore` has the operations of Azure EventProcessorHost's checkpoint manager.
:class:`DynamoDBCheckpointStore` adds the two-phase move this project's runs use:

1. :meth:`~DynamoDBCheckpointStore.prepare` records the checkpoint a batch will reach as
   ``pendingCheckpoint`` + ``pendingBatchId`` before the batch's output is published (a run
   marks the batch before reading and prepares it again once it knows where the read ended);
2. once the output is published, :meth:`~DynamoDBCheckpointStore.commit` moves ``checkpoint``
   to it, clears the pending fields and appends a history entry, in one transaction;
3. :meth:`~DynamoDBCheckpointStore.abort` clears a pending batch whose output was discarded.

Every write is fenced by ``leaseOwner`` + ``leaseCounter`` of the lease passed in and returns the
lease as stored afterwards, or ``None`` if the fence did not hold (the lease was lost).
Moves are validated: never backwards, never beyond what was read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from kinesis_batch.checkpoints.history import HistoryEntry, HistoryTable, utc_now
from kinesis_batch.control.waiting import Waited
from kinesis_batch.cost import ReadCost
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError
from kinesis_batch.landing import Landing
from kinesis_batch.leases.dynamodb import transact_write
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.shards.checkpoint import Checkpoint, validate_move

if TYPE_CHECKING:
    from collections.abc import Iterable

#: Longest batch id, in UTF-8 bytes: it is part of the history's range key (at most 1024 bytes).
MAX_BATCH_ID_BYTES = 256


class CheckpointStore(Protocol):
    """Checkpoint persistence, as Azure EventProcessorHost's ICheckpointManager has it."""

    def checkpoint_store_exists(self) -> bool: ...
    def create_checkpoint_store_if_not_exists(self) -> None: ...
    def create_all_checkpoints_if_not_exists(self, partition_ids: Iterable[str]) -> None: ...
    def get_checkpoint(self, partition_id: str) -> Checkpoint | None: ...
    def update_checkpoint(self, lease: Lease, checkpoint: Checkpoint) -> Lease | None: ...
    def delete_checkpoint(self, partition_id: str) -> None: ...
    def delete_checkpoint_store(self) -> None: ...


class DynamoDBCheckpointStore:
    def __init__(
        self,
        leases: LeaseStore,
        *,
        initial: Checkpoint | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """``clock`` gives the (time zone aware) commit time written to the history."""
        self.leases = leases
        self.history = HistoryTable(leases.client, leases.table_name)
        self.initial = initial or Checkpoint.trim_horizon()
        self._clock = clock

    # -- CheckpointStore ----------------------------------------------------------------------

    def checkpoint_store_exists(self) -> bool:
        return self.leases.table_exists() and self.history.exists()

    def create_checkpoint_store_if_not_exists(self) -> None:
        self.leases.create_table_if_not_exists()
        self.history.create_if_not_exists()

    def create_all_checkpoints_if_not_exists(self, partition_ids: Iterable[str]) -> None:
        """A lease item at the initial checkpoint for every partition that has none."""
        for partition_id in partition_ids:
            self.leases.create_lease_if_not_exists(Lease(partition_id, checkpoint=self.initial))

    def get_checkpoint(self, partition_id: str) -> Checkpoint | None:
        lease = self.leases.get_lease(partition_id)
        return lease.checkpoint if lease else None

    def update_checkpoint(self, lease: Lease, checkpoint: Checkpoint, *, run_id: str | None = None) -> Lease | None:
        """Move the checkpoint in one step (no pending batch); recorded in the history."""
        validate_move(lease.checkpoint, checkpoint)
        if lease.pending_batch_id is not None:
            raise InvalidStateError(
                f"lease {lease.lease_key} has pending batch {lease.pending_batch_id}: commit or abort it first"
            )
        batch_id = f"direct-{self._clock().strftime('%Y%m%dT%H%M%S%f')}"
        return self._move(lease, checkpoint, batch_id, run_id=run_id, records=0, require_pending=False)

    def delete_checkpoint(self, partition_id: str) -> None:
        """Delete the partition's lease item (its checkpoint with it); its history stays."""
        self.leases.delete_lease(partition_id)

    def delete_checkpoint_store(self) -> None:
        self.leases.delete_table()
        self.history.delete()

    # -- two-phase moves ----------------------------------------------------------------------

    def prepare(
        self,
        lease: Lease,
        checkpoint: Checkpoint,
        batch_id: str,
        *,
        read_through: Checkpoint | None = None,
        renew_until_ms: int | None = None,
    ) -> Lease | None:
        """Record that batch ``batch_id`` is in flight and will move the checkpoint to ``checkpoint``.

        A run marks its batch before reading (``checkpoint`` = the current checkpoint) and
        prepares it again, with the same batch id, once it knows where the read ended: preparing
        the pending batch again replaces its pending checkpoint; with the same checkpoint it
        changes nothing but the counter. Refuses a second batch while one is pending.

        With ``renew_until_ms`` the same write renews the lease (``leaseExpiresAt``): fenced,
        it proves the lease is still ours as a renewal would, so none is needed after it.

        A batch that ends where it started, at a start position (nothing read yet, or nothing
        to read), records only ``pendingBatchId``: a start position is never a pending
        checkpoint (the KCL's attribute has no room for an AT_TIMESTAMP's timestamp), and its
        commit keeps the checkpoint where it is.
        """
        if not batch_id:
            raise IllegalArgumentError("a batch id must not be empty")
        if len(batch_id.encode()) > MAX_BATCH_ID_BYTES:
            raise IllegalArgumentError(f"batch id {batch_id[:40]!r}... is longer than {MAX_BATCH_ID_BYTES} bytes")
        validate_move(lease.checkpoint, checkpoint, read_through=read_through)
        if lease.pending_batch_id not in (None, batch_id):
            raise InvalidStateError(
                f"lease {lease.lease_key} already has pending batch {lease.pending_batch_id}; recover it first"
            )
        renews = ", leaseExpiresAt = :expires" if renew_until_ms is not None else ""
        renewal = {":expires": {"N": str(renew_until_ms)}} if renew_until_ms is not None else {}
        if checkpoint.is_start:  # validate_move allowed it: it is the current checkpoint
            return self.leases.update(
                lease,
                f"SET leaseCounter = leaseCounter + :one, pendingBatchId = :batch{renews} "
                "REMOVE pendingCheckpoint, pendingCheckpointSubSequenceNumber",
                {":batch": {"S": batch_id}, **renewal},
            )
        return self.leases.update(
            lease,
            "SET leaseCounter = leaseCounter + :one, pendingCheckpoint = :cp, "
            f"pendingCheckpointSubSequenceNumber = :sub, pendingBatchId = :batch{renews}",
            {
                ":cp": {"S": checkpoint.value},
                ":sub": {"N": str(checkpoint.sub_sequence_number)},
                ":batch": {"S": batch_id},
                **renewal,
            },
        )

    def commit(
        self,
        lease: Lease,
        batch_id: str,
        *,
        run_id: str | None = None,
        records: int = 0,
        lag_at_start_ms: int | None = None,
        landing: Landing | None = None,
        cost: ReadCost | None = None,
        control_plane: Waited | None = None,
        release: bool = False,
    ) -> Lease | None:
        """Move the checkpoint to the pending one of ``batch_id`` and append the history entry
        (``records``, ``lag_at_start_ms``, the shard's lag when the batch's read began, the
        ``landing`` of decoded records, the read's ``cost`` and what the run's ``control_plane``
        calls met go in it); with ``release``, give
        the lease up in the same write (a run done with the shard: no release call after it).

        A pending batch without a pending checkpoint (see :meth:`prepare`) keeps the checkpoint;
        its history entry still says which run and batch covered the shard.
        """
        if lease.pending_batch_id != batch_id:
            raise InvalidStateError(
                f"lease {lease.lease_key} has no pending batch {batch_id} (pending: {lease.pending_batch_id})"
            )
        target = lease.checkpoint if lease.pending_checkpoint is None else lease.pending_checkpoint
        validate_move(lease.checkpoint, target)
        return self._move(
            lease,
            target,
            batch_id,
            run_id=run_id,
            records=records,
            lag_at_start_ms=lag_at_start_ms,
            landing=landing,
            cost=cost,
            control_plane=control_plane,
            release=release,
        )

    def abort(self, lease: Lease, batch_id: str) -> Lease | None:
        """Forget pending batch ``batch_id`` (its output was discarded); the checkpoint stays."""
        if lease.pending_batch_id != batch_id:
            return lease
        return self.leases.update(
            lease,
            "SET leaseCounter = leaseCounter + :one "
            "REMOVE pendingCheckpoint, pendingCheckpointSubSequenceNumber, pendingBatchId",
            {":batch": {"S": batch_id}},
            condition="pendingBatchId = :batch",
        )

    def _move(
        self,
        lease: Lease,
        checkpoint: Checkpoint,
        batch_id: str,
        *,
        run_id: str | None,
        records: int,
        require_pending: bool = True,
        lag_at_start_ms: int | None = None,
        landing: Landing | None = None,
        cost: ReadCost | None = None,
        control_plane: Waited | None = None,
        release: bool = False,
    ) -> Lease | None:
        owner = lease.lease_owner
        if owner is None:
            raise IllegalArgumentError(f"checkpoint of lease {lease.lease_key} moved without holding it")
        entry = HistoryEntry(
            lease_key=lease.lease_key,
            batch_id=batch_id,
            run_id=run_id,
            owner=owner,
            committed_at=self._clock(),
            from_checkpoint=lease.checkpoint,
            to_checkpoint=checkpoint,
            records=records,
            lease_counter=lease.lease_counter,
            lag_at_start_ms=lag_at_start_ms,
            landing=landing,
            cost=cost,
            control_plane=control_plane,
        )
        values: dict[str, dict[str, Any]] = {
            ":one": {"N": "1"},
            ":zero": {"N": "0"},
            ":owner": {"S": owner},
            ":counter": {"N": str(lease.lease_counter)},
            ":cp": {"S": checkpoint.value},
            ":sub": {"N": str(checkpoint.sub_sequence_number)},
            ":batch": {"S": batch_id},
        }
        sets = [
            "leaseCounter = leaseCounter + :one",
            "checkpoint = :cp",
            "checkpointSubSequenceNumber = :sub",
            "ownerSwitchesSinceCheckpoint = :zero",
            "lastBatchId = :batch",
        ]
        removes = ["pendingCheckpoint", "pendingCheckpointSubSequenceNumber", "pendingBatchId"]
        removes += ["leaseOwner", "leaseExpiresAt"] if release else []
        if checkpoint.timestamp is not None:
            sets.append("checkpointTimestamp = :ts")
            values[":ts"] = {"S": checkpoint.timestamp.isoformat()}
        else:
            removes.append("checkpointTimestamp")
        if run_id is not None:
            sets.append("lastRunId = :run")
            values[":run"] = {"S": run_id}
        else:
            removes.append("lastRunId")  # lastRunId is the run of lastBatchId, or absent
        condition = "leaseOwner = :owner AND leaseCounter = :counter"
        condition += " AND pendingBatchId = :batch" if require_pending else ""
        update = {
            "Update": {
                "TableName": self.leases.table_name,
                "Key": {"leaseKey": {"S": lease.lease_key}},
                "UpdateExpression": f"SET {', '.join(sets)} REMOVE {', '.join(removes)}",
                "ConditionExpression": condition,
                "ExpressionAttributeValues": values,
            }
        }
        if not transact_write(self.leases.client, self.leases.table_name, [update, self.history.put_request(entry)]):
            return None
        return replace(
            lease,
            lease_counter=lease.lease_counter + 1,
            checkpoint=checkpoint,
            pending_checkpoint=None,
            pending_batch_id=None,
            owner_switches_since_checkpoint=0,
            last_batch_id=batch_id,
            last_run_id=run_id,
            lease_owner=None if release else owner,
            expires_at_ms=None if release else lease.expires_at_ms,
        )
