"""What the status views show (the CLI and the Airflow UI page): JSON-able rows per shard, and
history. Read-only, and only of a table that is this stream's (kinesis_batch.ownership)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kinesis_batch import defaults, ownership
from kinesis_batch.binding import moves
from kinesis_batch.checkpoints.history import HistoryEntry, HistoryTable
from kinesis_batch.checkpoints.mark import TableMark
from kinesis_batch.checkpoints.runs import summarize_runs
from kinesis_batch.errors import LeaseTableNotFoundError
from kinesis_batch.landing import json_fields
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.maintenance.report import last as last_maintenance
from kinesis_batch.output.datafiles import MIB, FileStats, small_files
from kinesis_batch.output.sink import Sink
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lag import RetentionRisk, ShardLag, shard_lag
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient

# Lag probes are a few GetRecords calls per shard; run them side by side, not one after another.
LAG_PROBES_AT_ONCE = 16
RUNS_SHOWN = 48  # two days of hourly runs


def stream_status(
    kinesis: KinesisClient,
    dynamodb: DynamoDBClient,
    stream: str,
    table: str,
    *,
    now: datetime | None = None,
    output: Sink | None = None,
    small_file_mb: float = defaults.SMALL_FILE_MB,
) -> dict[str, Any]:
    """The stream's consumer at a glance: retention, the per-shard rows (with lag) and a summary;
    with ``output``, also the output's last batch beside the checkpoints, and its files."""
    now = now or datetime.now(UTC)
    claim = ownership.check(kinesis, LeaseStore(dynamodb, table), stream)
    hours = claim.stream.retention_hours
    rows = shard_status(kinesis, dynamodb, stream, table, now=now, hours=hours)
    unfinished = [row for row in rows if row["checkpoint"] != "SHARD_END"]
    last = None
    if output is not None:
        last = output_status(output, rows) | {"table": table_status(output, small_file_mb=small_file_mb)}
    return {
        "stream": stream,
        "table": table,
        "measured_at": now.isoformat(),
        "retention_hours": hours,
        "summary": {
            "shards": len(rows),
            "open": sum(1 for row in rows if not row["closed"]),
            "leased": sum(1 for row in rows if _lease_live(row, now)),
            "pending_batches": sorted({row["pending_batch"] for row in rows if row["pending_batch"]}),
            "max_lag_seconds": max((row["lag_seconds"] for row in unfinished), default=0.0),
            "worst_retention_risk": _worst([row["retention_risk"] for row in rows]),
        },
        "shards": rows,
        "output": last,
        "publishes_to": publishes_to(claim.mark, HistoryTable(dynamodb, table)),
    }


def publishes_to(mark: TableMark | None, history: HistoryTable) -> dict[str, Any] | None:
    """The outputs the lease table records (kinesis_batch.binding), and their moves, oldest first
    (None: a table no run has marked yet)."""
    if mark is None:
        return None
    return {
        "output": mark.output,
        "dead_letter_output": mark.dead_letter_output,
        "moves": [
            {
                "moved_at": move.moved_at.isoformat(),
                "moved_by": move.moved_by,
                "from": move.from_output,
                "to": move.to_output,
                "checkpoints": move.checkpoints,
            }
            for move in moves(history)
        ],
    }


def output_status(output: Sink, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The output's last committed batch, and the shards whose checkpoint disagrees with it (a
    crash between the table commit and the checkpoint commit: the next run rolls them forward).
    Its files are :func:`table_status`'s (a listing of the whole table: only where shown).

    Adds to each row of a shard in that batch: ``output_batch``, ``output_end`` and
    ``output_agrees`` (the checkpoint is where the batch ended). An output that is another
    format's table, or none of ours, is refused (ForeignOutputError): nothing of it is shown."""
    output.check_place()
    record = output.last_batch()
    disagree = []
    for row in rows:
        shard = record.shard(row["shard_id"]) if record else None
        if record is None or shard is None:
            continue
        agrees = row["checkpoint"] == str(shard.end)
        row |= {
            "output_batch": record.batch_id,
            "output_end": str(shard.end),
            "output_agrees": agrees,
            "output_records": shard.records,
            **{f"output_{key}": value for key, value in json_fields(shard.landing).items()},
        }
        if not agrees:
            disagree.append(row["shard_id"])
    return {
        "format": output.format,
        "uri": output.uri,
        "last_batch": record.batch_id if record else None,
        "last_run": record.run_id if record else None,
        "committed_at": record.created_at.isoformat() if record else None,
        "records": record.records if record else 0,
        **json_fields(record.landing if record else None),
        "disagreeing_shards": disagree,
    }


def table_status(output: Sink, *, small_file_mb: float = defaults.SMALL_FILE_MB) -> dict[str, Any]:
    """The output's files now (how many, how big, in its recent partitions too), a warning when
    those are small (kinesis_batch.output.datafiles), and its last maintenance."""
    stats = FileStats.of(output.table_sink().data_files())
    maintained = last_maintenance(output.table_sink().bookkeeping())
    return {
        **stats.to_json(),
        "small_files": small_files(stats, int(small_file_mb * MIB)),
        "last_maintenance": maintained.to_json() if maintained else None,
    }


def shard_status(
    kinesis: KinesisClient, dynamodb: DynamoDBClient, stream: str, table: str, *, now: datetime, hours: int
) -> list[dict[str, Any]]:
    """Every shard of ``stream`` in lineage order with its lease and checkpoint (if any), its lag
    behind the checkpoint (a shard without a lease yet counts from TRIM_HORIZON, where the next
    run starts it) and its retention risk under ``hours`` of retention. Read-only."""
    lineage = Lineage.build(list_shards(kinesis, stream))  # an unknown stream is said first
    store = LeaseStore(dynamodb, table)
    if not store.table_exists():
        raise LeaseTableNotFoundError(f"lease table {table!r} does not exist (has a run happened for {stream!r}?)")
    leases = {lease.lease_key: lease for lease in store.list_leases()}

    def probe(shard_id: str) -> ShardLag:
        lease = leases.get(shard_id)
        checkpoint = lease.checkpoint if lease else Checkpoint.trim_horizon()
        return shard_lag(kinesis, stream, lineage.shards[shard_id], checkpoint, now)

    with ThreadPoolExecutor(LAG_PROBES_AT_ONCE) as pool:
        lags = list(pool.map(probe, lineage.order))
    rows = []
    for shard_id, lag in zip(lineage.order, lags, strict=True):
        shard, lease = lineage.shards[shard_id], leases.get(shard_id)
        oldest = lag.oldest_unread_at
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
                "lag_seconds": lag.lag_seconds,
                "oldest_unread_at": oldest.isoformat() if oldest else None,
                "millis_behind_latest": lag.millis_behind_latest,
                "retention_risk": lag.risk(hours).value,
            }
        )
    return rows


def _lease_live(row: dict[str, Any], now: datetime) -> bool:
    expires = row["lease_expires_at_ms"]
    return bool(row["lease_owner"]) and expires is not None and expires > now.timestamp() * 1000


def _worst(risks: list[str]) -> str:
    order = [risk.value for risk in RetentionRisk]
    return max(risks, key=order.index, default=RetentionRisk.OK.value)


def history_rows(
    kinesis: KinesisClient, dynamodb: DynamoDBClient, stream: str, table: str, *, run_id: str | None = None
) -> list[dict[str, Any]]:
    """Every committed move, oldest first (``run_id``: that run's only)."""
    ownership.check(kinesis, LeaseStore(dynamodb, table), stream)
    return [
        {
            "shard_id": e.lease_key,
            "run_id": e.run_id,
            "batch_id": e.batch_id,
            "committed_at": e.committed_at.isoformat(),
            "from": str(e.from_checkpoint),
            "to": str(e.to_checkpoint),
            "records": e.records,
            **json_fields(e.landing),
            "lag_at_start_ms": e.lag_at_start_ms,
        }
        for e in _history(dynamodb, table, run_id)
    ]


def run_rows(
    kinesis: KinesisClient, dynamodb: DynamoDBClient, stream: str, table: str, *, last: int = RUNS_SHOWN
) -> list[dict[str, Any]]:
    """The newest ``last`` runs over the history, oldest first: records and lag at each run."""
    ownership.check(kinesis, LeaseStore(dynamodb, table), stream)
    return [
        {
            "run": run.run,
            "committed_at": run.committed_at.isoformat(),
            "records": run.records,
            "shards": run.shards,
            **json_fields(run.landing),
            "lag_at_start_ms": run.lag_at_start_ms,
        }
        for run in summarize_runs(_history(dynamodb, table, None), last=last)
    ]


def _history(dynamodb: DynamoDBClient, table: str, run_id: str | None) -> list[HistoryEntry]:
    history = HistoryTable(dynamodb, table)
    if not history.exists():
        raise LeaseTableNotFoundError(f"checkpoint history table {history.table_name!r} does not exist")
    if run_id:
        return history.for_run(run_id)
    keys = [lease.lease_key for lease in LeaseStore(history.client, table).list_leases()]
    return sorted((e for key in keys for e in history.for_shard(key)), key=lambda e: e.commit_id)
