"""What the status views show (CLI, later the UI): one JSON-able row per shard, and history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.errors import LeaseTableNotFoundError
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient


def shard_status(kinesis: KinesisClient, dynamodb: DynamoDBClient, stream: str, table: str) -> list[dict[str, Any]]:
    """Every shard of ``stream`` in lineage order with its lease and checkpoint (if any)."""
    lineage = Lineage.build(list_shards(kinesis, stream))  # an unknown stream is said first
    store = LeaseStore(dynamodb, table)
    if not store.table_exists():
        raise LeaseTableNotFoundError(f"lease table {table!r} does not exist (has a run happened for {stream!r}?)")
    leases = {lease.lease_key: lease for lease in store.list_leases()}
    rows = []
    for shard_id in lineage.order:
        shard, lease = lineage.shards[shard_id], leases.get(shard_id)
        rows.append(
            {
                "shard_id": shard_id,
                "parent_shard_ids": list(shard.parent_ids),
                "children": list(lineage.children[shard_id]),
                "lineage_depth": lineage.depth(shard_id),
                "closed": shard.closed,
                "checkpoint": str(lease.checkpoint) if lease else None,
                "lease_owner": lease.lease_owner if lease else None,
                "lease_expires_at_ms": lease.expires_at_ms if lease else None,
                "pending_batch": lease.pending_batch_id if lease else None,
                "last_run": lease.last_run_id if lease else None,
            }
        )
    return rows


def history_rows(dynamodb: DynamoDBClient, table: str, *, run_id: str | None = None) -> list[dict[str, Any]]:
    history = HistoryTable(dynamodb, table)
    if not history.exists():
        raise LeaseTableNotFoundError(f"checkpoint history table {history.table_name!r} does not exist")
    if run_id:
        entries = history.for_run(run_id)
    else:
        keys = [lease.lease_key for lease in LeaseStore(history.client, table).list_leases()]
        entries = sorted((e for key in keys for e in history.for_shard(key)), key=lambda e: e.commit_id)
    return [
        {
            "shard_id": e.lease_key,
            "run_id": e.run_id,
            "batch_id": e.batch_id,
            "committed_at": e.committed_at.isoformat(),
            "from": str(e.from_checkpoint),
            "to": str(e.to_checkpoint),
            "records": e.records,
        }
        for e in entries
    ]
