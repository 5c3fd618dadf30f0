"""A KCL application's lease table, as KCL writes it (DynamoDBLeaseSerializer and its
multi-stream variant): read-only here, except for the export's checkpoint writes
(kinesis_batch.kcl.handover).

Per lease: ``leaseKey`` (a shard id, or ``account:stream:creationEpoch:shardId`` in a
multi-stream application, which also writes ``streamName`` and ``shardId``), ``leaseCounter``
(N), ``leaseOwner``, ``checkpoint`` (a sequence number or ``TRIM_HORIZON``, ``LATEST``,
``AT_TIMESTAMP``, ``SHARD_END``), ``checkpointSubSequenceNumber`` (N: the last user record of a
KPL aggregate processed), ``pendingCheckpoint`` (a two-phase checkpoint in flight),
``ownerSwitchesSinceCheckpoint``, ``parentShardId`` (SS). Rows of KCL 3's single-table format
that are not leases (no ``checkpoint``) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from kinesis_batch.errors import InvalidStateError, KinesisBatchError, StreamRecreatedError
from kinesis_batch.leases.dynamodb import call_dynamodb
from kinesis_batch.ownership.foreign import MULTI_STREAM_KEY
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.listing import StreamDescription

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class KclLease:
    key: str  # leaseKey as in the table
    shard_id: str
    stream: str | None  # a multi-stream lease's stream (None: a single-stream application's)
    created_epoch: int | None  # a multi-stream lease's stream incarnation (epoch seconds)
    owner: str | None
    counter: int
    checkpoint: Checkpoint
    pending: bool  # a pendingCheckpoint in flight
    parents: frozenset[str]

    @classmethod
    def from_item(cls, item: Item, table: str) -> KclLease:
        key = str(item["leaseKey"]["S"])
        multi = MULTI_STREAM_KEY.match(key)
        value = str(item["checkpoint"]["S"])
        if value == "AT_TIMESTAMP":
            raise InvalidStateError(
                f"{table}: {key}'s KCL checkpoint is AT_TIMESTAMP, whose time lives in the application's "
                "configuration, not in its table: let the KCL application read that shard first"
            )
        try:
            checkpoint = Checkpoint(value, int(item.get("checkpointSubSequenceNumber", {}).get("N", 0)))
        except (KinesisBatchError, ValueError) as exc:
            raise InvalidStateError(f"{table}: {key} holds no KCL checkpoint kinesis-batch can read: {exc}") from exc
        return cls(
            key=key,
            shard_id=multi.group(4) if multi else key,
            stream=multi.group(2) if multi else None,
            created_epoch=int(multi.group(3)) if multi else None,
            owner=item["leaseOwner"]["S"] if "leaseOwner" in item else None,
            counter=int(item.get("leaseCounter", {}).get("N", 0)),
            checkpoint=checkpoint,
            pending=bool(item.get("pendingCheckpoint", {}).get("S")),
            parents=frozenset(item.get("parentShardId", {}).get("SS", ())),
        )


def read_leases(dynamodb: DynamoDBClient, table: str) -> list[KclLease]:
    """Every lease row of the table (LeaseTableNotFoundError when there is no such table)."""
    return [KclLease.from_item(item, table) for item in _scan(dynamodb, table) if "checkpoint" in item]


def counters(dynamodb: DynamoDBClient, table: str) -> dict[str, int]:
    """leaseKey -> leaseCounter of every lease row: what moves while KCL workers run."""
    return {lease.key: lease.counter for lease in read_leases(dynamodb, table)}


def kcl_key(stream: StreamDescription, shard_id: str, *, multi_stream: bool) -> str:
    """The leaseKey KCL gives a shard of ``stream``."""
    if not multi_stream:
        return shard_id
    return f"{stream.account}:{stream.name}:{int(stream.created_at.timestamp())}:{shard_id}"


def leases_of(stream: StreamDescription, leases: list[KclLease], table: str) -> list[KclLease]:
    """The leases of ``stream``'s incarnation: all of a single-stream table's; a multi-stream
    table's for that stream's current incarnation. Leases of an earlier incarnation are KCL's
    leftovers beside current ones, and refused (StreamRecreatedError) when they are all there is."""
    epoch = int(stream.created_at.timestamp())
    named = [lease for lease in leases if lease.stream in (None, stream.name)]
    mine = [lease for lease in named if lease.created_epoch in (None, epoch)]
    older = sorted({lease.created_epoch for lease in named if lease.created_epoch not in (None, epoch)}, key=str)
    if older and not mine:
        raise StreamRecreatedError(
            f"{table} holds stream {stream.name}'s checkpoints of the stream created at epoch {older[0]}, not of the "
            f"one created at epoch {epoch} (it was deleted and created again): they do not apply; start kinesis-batch "
            "on its own table at a position of your choice instead"
        )
    return mine


def _scan(dynamodb: DynamoDBClient, table: str) -> list[Item]:
    request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    items: list[Item] = []
    while True:
        page = call_dynamodb("Scan", table, lambda: dynamodb.scan(**request))
        items.extend(cast(list[Item], page.get("Items", [])))
        if "LastEvaluatedKey" not in page:
            return items
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


__all__ = ["KclLease", "counters", "kcl_key", "leases_of", "read_leases"]
