"""Reading the status (kinesis_batch.status.values) and the history rows the views show.
Read-only, and only of a table that is this stream's (kinesis_batch.ownership)."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kinesis_batch import defaults, ownership
from kinesis_batch.binding import moves
from kinesis_batch.checkpoints.bills import bills
from kinesis_batch.checkpoints.history import HistoryEntry, HistoryTable
from kinesis_batch.checkpoints.runs import summarize_runs
from kinesis_batch.errors import LeaseTableNotFoundError
from kinesis_batch.landing import json_fields
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.maintenance.report import last as last_maintenance
from kinesis_batch.output.datafiles import MIB, FileStats, small_files
from kinesis_batch.output.sink import Stored
from kinesis_batch.ownership.table_mark import TableMark
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lag import ShardLag, shard_lag
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards
from kinesis_batch.status.values import (
    FilesStatus,
    OutputStatus,
    PublishesTo,
    ShardOutput,
    ShardStatus,
    StreamStatus,
)

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
    output: Stored | None = None,
    small_file_mb: float = defaults.SMALL_FILE_MB,
) -> StreamStatus:
    """The stream's consumer at a glance: retention, every shard (with lag) and where it
    publishes; with ``output``, also the output's last batch beside the checkpoints, and its files."""
    now = now or datetime.now(UTC)
    claim = ownership.check(kinesis, LeaseStore(dynamodb, table), stream)
    hours = claim.stream.retention_hours
    shards = shard_status(kinesis, dynamodb, stream, table, now=now, hours=hours)
    last = None
    if output is not None:
        last, ends = output_status(output, {shard.shard_id: shard.checkpoint for shard in shards})
        last = replace(last, files=table_status(output, small_file_mb=small_file_mb))
        shards = tuple(replace(shard, output=ends.get(shard.shard_id)) for shard in shards)
    return StreamStatus(
        stream, table, now, hours, shards, last, publishes_to(claim.mark, HistoryTable(dynamodb, table))
    )


def publishes_to(mark: TableMark | None, history: HistoryTable) -> PublishesTo | None:
    """The outputs the lease table records (kinesis_batch.binding), and their moves, oldest first
    (None: a table no run has marked yet)."""
    if mark is None:
        return None
    return PublishesTo(mark.output, mark.dead_letter_output, tuple(moves(history)))


def output_status(
    output: Stored, checkpoints: Mapping[str, Checkpoint | None]
) -> tuple[OutputStatus, dict[str, ShardOutput]]:
    """The output's last committed batch, and where it left each of the shards (of
    ``checkpoints``: shard -> checkpoint) it holds, with whether the checkpoint is there (not: a
    crash between the table commit and the checkpoint commit; the next run rolls them forward).
    Without its files (:func:`table_status`: a listing of the whole table, only where shown).
    An output that is another format's table, or none of ours, is refused (ForeignOutputError)."""
    output.check_place()
    record = output.last_batch()
    ends: dict[str, ShardOutput] = {}
    for shard_id, checkpoint in checkpoints.items():
        shard = record.shard(shard_id) if record else None
        if record is None or shard is None:
            continue
        agrees = str(checkpoint) == str(shard.end)
        ends[shard_id] = ShardOutput(record.batch_id, str(shard.end), agrees, shard.records, shard.landing)
    status = OutputStatus(
        format=output.format,
        uri=output.uri,
        last_batch=record.batch_id if record else None,
        last_run=record.run_id if record else None,
        committed_at=record.created_at if record else None,
        records=record.records if record else 0,
        landing=record.landing if record else None,
        disagreeing_shards=tuple(shard_id for shard_id, end in ends.items() if not end.agrees),
    )
    return status, ends


def table_status(output: Stored, *, small_file_mb: float = defaults.SMALL_FILE_MB) -> FilesStatus:
    """The output's files now (how many, how big, in its recent partitions too), a warning when
    those are small (kinesis_batch.output.datafiles), and its last maintenance."""
    stats = FileStats.of(output.table_sink().data_files())
    maintained = last_maintenance(output.table_sink().bookkeeping())
    return FilesStatus(stats, small_files(stats, int(small_file_mb * MIB)), maintained)


def shard_status(
    kinesis: KinesisClient, dynamodb: DynamoDBClient, stream: str, table: str, *, now: datetime, hours: int
) -> tuple[ShardStatus, ...]:
    """Every shard of ``stream`` in lineage order with its lease and checkpoint (if any), its lag
    behind the checkpoint (a shard without a lease yet counts from TRIM_HORIZON, where the next
    run starts it) and its retention risk under ``hours`` of retention. Read-only."""
    lineage = Lineage.build(list_shards(kinesis, stream))  # an unknown stream is said first
    store = _lease_table(dynamodb, table, stream)
    leases = {lease.lease_key: lease for lease in store.list_leases()}

    def probe(shard_id: str) -> ShardLag:
        lease = leases.get(shard_id)
        checkpoint = lease.checkpoint if lease else Checkpoint.trim_horizon()
        return shard_lag(kinesis, stream, lineage.shards[shard_id], checkpoint, now)

    with ThreadPoolExecutor(LAG_PROBES_AT_ONCE) as pool:
        lags = list(pool.map(probe, lineage.order))
    return tuple(
        ShardStatus(
            shard_id=shard_id,
            parent_shard_ids=tuple(lineage.shards[shard_id].parent_ids),
            children=tuple(lineage.children[shard_id]),
            lineage_depth=lineage.depth(shard_id),
            closed=lineage.shards[shard_id].closed,
            checkpoint=lease.checkpoint if lease else None,
            lease_owner=lease.lease_owner if lease else None,
            lease_expires_at_ms=lease.expires_at_ms if lease else None,
            pending_batch=lease.pending_batch_id if lease else None,
            last_run=lease.last_run_id if lease else None,
            lag=lag,
            retention_risk=lag.risk(hours),
            settle_failure=lease.failing_to_settle if lease else None,
        )
        for shard_id, lag, lease in ((s, lag, leases.get(s)) for s, lag in zip(lineage.order, lags, strict=True))
    )


def history_rows(
    kinesis: KinesisClient, dynamodb: DynamoDBClient, stream: str, table: str, *, run_id: str | None = None
) -> list[dict[str, Any]]:
    """Every committed move, oldest first (``run_id``: that run's only)."""
    ownership.check(kinesis, _lease_table(dynamodb, table, stream), stream)
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
    """The newest ``last`` runs over the history, oldest first: records and lag at each run, and
    every job run billed to it (``job_runs``, also a run's that committed nothing)."""
    ownership.check(kinesis, _lease_table(dynamodb, table, stream), stream)
    entries = _history(dynamodb, table, None)
    return [
        {
            "run": run.run,
            "committed_at": run.committed_at.isoformat(),
            "committed": run.committed,
            "records": run.records,
            "shards": run.shards,
            **json_fields(run.landing),
            "lag_at_start_ms": run.lag_at_start_ms,
            **({"cost": run.cost.to_json()} if run.cost else {}),
            **({"job_runs": [bill.to_json() for bill in run.billed]} if run.billed else {}),
            **({"control_plane": run.control_plane.to_json()} if run.control_plane else {}),
        }
        for run in summarize_runs(entries, bills=bills(HistoryTable(dynamodb, table)), last=last)
    ]


def _lease_table(dynamodb: DynamoDBClient, table: str, stream: str) -> LeaseStore:
    """The lease table of ``stream``'s consumer, which its first run makes."""
    store = LeaseStore(dynamodb, table)
    if not store.table_exists():
        raise LeaseTableNotFoundError(f"lease table {table!r} does not exist (has a run happened for {stream!r}?)")
    return store


def _history(dynamodb: DynamoDBClient, table: str, run_id: str | None) -> list[HistoryEntry]:
    history = HistoryTable(dynamodb, table)
    if not history.exists():
        raise LeaseTableNotFoundError(f"checkpoint history table {history.table_name!r} does not exist")
    if run_id:
        return history.for_run(run_id)
    keys = [lease.lease_key for lease in LeaseStore(history.client, table).list_leases()]
    return sorted((e for key in keys for e in history.for_shard(key)), key=lambda e: e.commit_id)
