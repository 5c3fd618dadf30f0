"""The lease: one item of the lease table, one per shard.

Attribute names follow the Kinesis Client Library so a KCL application's table can be read
(and, with the KCL stopped, handed over). Our own attributes are added beside them; the KCL
keeps attributes it does not know on its attribute-level updates.

=================================== ====== ==========================================
attribute                           type   meaning
=================================== ====== ==========================================
leaseKey                            S      shard id (hash key)
leaseOwner                          S      worker id of the holder; absent when free
leaseCounter                        N      +1 on every take, renew and fenced write
checkpoint                          S      sequence number, or a sentinel name
checkpointSubSequenceNumber         N
pendingCheckpoint                   S      set by prepare, cleared by commit/abort
pendingCheckpointSubSequenceNumber  N
ownerSwitchesSinceCheckpoint        N
parentShardId                       SS     absent when the shard has no parent
leaseExpiresAt                      N      (ours) epoch ms until which the holder is live
pendingBatchId                      S      (ours) the batch the pending checkpoint belongs to
checkpointTimestamp                 S      (ours) ISO time, for AT_TIMESTAMP checkpoints
lineageDepth                        N      (ours) depth when the lease was created
lastBatchId, lastRunId              S      (ours) the last committed batch and its run
settleFailure                       S      (ours) JSON [batch, times, last error]: a pending
                                           batch that runs failed to settle (SettleFailure)
=================================== ====== ==========================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kinesis_batch.errors import KinesisBatchError, MalformedLeaseError
from kinesis_batch.shards.checkpoint import Checkpoint

Item = dict[str, dict[str, Any]]  # a DynamoDB item in the low-level client's typed form
_TRIM_HORIZON = Checkpoint.trim_horizon()


@dataclass(frozen=True)
class SettleFailure:
    """Runs failed to settle pending batch ``batch_id`` (roll it forward or discard it) ``times``
    times; ``error`` is the last one's line. It speaks of that batch only: once the batch is
    settled (no longer pending), a record naming it is stale."""

    batch_id: str
    times: int
    error: str

    def to_text(self) -> str:
        return json.dumps([self.batch_id, self.times, self.error[:500]])

    @classmethod
    def from_text(cls, text: str) -> SettleFailure:
        batch_id, times, error = json.loads(text)
        return cls(str(batch_id), int(times), str(error))

    def again(self, batch_id: str, error: str) -> SettleFailure:
        """This record after one more failure, of ``batch_id``."""
        return SettleFailure(batch_id, self.times + 1 if batch_id == self.batch_id else 1, error)


@dataclass(frozen=True)
class Lease:
    lease_key: str
    lease_owner: str | None = None
    lease_counter: int = 0
    checkpoint: Checkpoint = _TRIM_HORIZON
    pending_checkpoint: Checkpoint | None = None
    pending_batch_id: str | None = None
    owner_switches_since_checkpoint: int = 0
    parent_shard_ids: frozenset[str] = frozenset()
    expires_at_ms: int | None = None
    lineage_depth: int | None = None
    last_batch_id: str | None = None
    last_run_id: str | None = None
    settle_failure: SettleFailure | None = None

    @property
    def failing_to_settle(self) -> SettleFailure | None:
        """The failures of settling the batch pending now (None: none, or of a batch since settled)."""
        failure = self.settle_failure
        return failure if failure is not None and failure.batch_id == self.pending_batch_id else None

    @property
    def shard_id(self) -> str:
        """The shard part of ``leaseKey`` (which is ``stream:shardId`` in a shared table)."""
        return self.lease_key.rsplit(":", 1)[-1]

    def is_live(self, now_ms: int) -> bool:
        """Held by someone who may still be working on it.

        An owner without ``leaseExpiresAt`` (a KCL worker writes none) counts as live: taking
        it needs ``force``, so a running KCL application is never silently robbed.
        """
        if self.lease_owner is None:
            return False
        return self.expires_at_ms is None or now_ms < self.expires_at_ms

    def to_item(self) -> Item:
        item: Item = {
            "leaseKey": {"S": self.lease_key},
            "leaseCounter": {"N": str(self.lease_counter)},
            "ownerSwitchesSinceCheckpoint": {"N": str(self.owner_switches_since_checkpoint)},
            **checkpoint_attributes(self.checkpoint),
        }
        if self.lease_owner is not None:
            item["leaseOwner"] = {"S": self.lease_owner}
        if self.pending_checkpoint is not None:
            item["pendingCheckpoint"] = {"S": self.pending_checkpoint.value}
            item["pendingCheckpointSubSequenceNumber"] = {"N": str(self.pending_checkpoint.sub_sequence_number)}
        if self.pending_batch_id is not None:
            item["pendingBatchId"] = {"S": self.pending_batch_id}
        if self.parent_shard_ids:
            item["parentShardId"] = {"SS": sorted(self.parent_shard_ids)}
        if self.expires_at_ms is not None:
            item["leaseExpiresAt"] = {"N": str(self.expires_at_ms)}
        if self.lineage_depth is not None:
            item["lineageDepth"] = {"N": str(self.lineage_depth)}
        if self.last_batch_id is not None:
            item["lastBatchId"] = {"S": self.last_batch_id}
        if self.last_run_id is not None:
            item["lastRunId"] = {"S": self.last_run_id}
        if self.settle_failure is not None:
            item["settleFailure"] = {"S": self.settle_failure.to_text()}
        return item

    @classmethod
    def from_item(cls, item: Mapping[str, Mapping[str, Any]]) -> Lease:
        """Parse an item; raises :class:`MalformedLeaseError` naming the key and attribute."""
        key = item.get("leaseKey", {}).get("S")
        if not key:
            raise MalformedLeaseError(f"lease item without a string leaseKey: {dict(item)!r:.200}")
        try:
            timestamp = _opt_s(item, "checkpointTimestamp")
            checkpoint = Checkpoint(
                _s(item, "checkpoint"),
                _n(item, "checkpointSubSequenceNumber", 0),
                datetime.fromisoformat(timestamp) if timestamp else None,
            )
            pending_value = _opt_s(item, "pendingCheckpoint")
            pending = (
                Checkpoint(pending_value, _n(item, "pendingCheckpointSubSequenceNumber", 0))
                if pending_value is not None
                else None
            )
            return cls(
                lease_key=key,
                lease_owner=_opt_s(item, "leaseOwner"),
                lease_counter=_n(item, "leaseCounter"),
                checkpoint=checkpoint,
                pending_checkpoint=pending,
                pending_batch_id=_opt_s(item, "pendingBatchId"),
                owner_switches_since_checkpoint=_n(item, "ownerSwitchesSinceCheckpoint", 0),
                parent_shard_ids=_opt_ss(item, "parentShardId"),
                expires_at_ms=_opt_n(item, "leaseExpiresAt"),
                lineage_depth=_opt_n(item, "lineageDepth"),
                last_batch_id=_opt_s(item, "lastBatchId"),
                last_run_id=_opt_s(item, "lastRunId"),
                settle_failure=SettleFailure.from_text(failed) if (failed := _opt_s(item, "settleFailure")) else None,
            )
        except (KinesisBatchError, KeyError, TypeError, ValueError) as exc:  # json's errors are ValueErrors
            raise MalformedLeaseError(f"lease {key!r} is malformed: {exc}") from exc


def checkpoint_attributes(checkpoint: Checkpoint) -> Item:
    """The item attributes that hold a checkpoint (for puts; updates name them one by one)."""
    item: Item = {
        "checkpoint": {"S": checkpoint.value},
        "checkpointSubSequenceNumber": {"N": str(checkpoint.sub_sequence_number)},
    }
    if checkpoint.timestamp is not None:
        item["checkpointTimestamp"] = {"S": checkpoint.timestamp.isoformat()}
    return item


def _s(item: Mapping[str, Mapping[str, Any]], name: str) -> str:
    value = _opt_s(item, name)
    if value is None:
        raise KeyError(f"missing attribute {name}")
    return value


def _opt_s(item: Mapping[str, Mapping[str, Any]], name: str) -> str | None:
    if name not in item:
        return None
    if "NULL" in item[name]:
        return None
    if "S" not in item[name]:
        raise TypeError(f"attribute {name} is not a string: {dict(item[name])!r}")
    return str(item[name]["S"])


def _opt_ss(item: Mapping[str, Mapping[str, Any]], name: str) -> frozenset[str]:
    if name not in item or "NULL" in item[name]:
        return frozenset()
    if "SS" not in item[name]:
        raise TypeError(f"attribute {name} is not a string set: {dict(item[name])!r}")
    return frozenset(str(value) for value in item[name]["SS"])


def _n(item: Mapping[str, Mapping[str, Any]], name: str, default: int | None = None) -> int:
    value = _opt_n(item, name)
    if value is None:
        if default is None:
            raise KeyError(f"missing attribute {name}")
        return default
    return value


def _opt_n(item: Mapping[str, Mapping[str, Any]], name: str) -> int | None:
    if name not in item or "NULL" in item[name]:
        return None
    if "N" not in item[name]:
        raise TypeError(f"attribute {name} is not a number: {dict(item[name])!r}")
    return int(item[name]["N"])
