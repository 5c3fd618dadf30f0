"""Hand a stream over between a stopped KCL application and kinesis-batch, both ways.

The runbook (docs/operations.md): stop every worker of the KCL application; ``import-kcl``
creates a kinesis-batch lease table from its checkpoints; kinesis-batch catches up in batch;
stop kinesis-batch's schedule; ``export-kcl`` writes kinesis-batch's checkpoints back into the
KCL table; start the KCL application, which resumes exactly where kinesis-batch stopped.

Both refuse, in one line and having written nothing, while the KCL application is alive (a
``leaseCounter`` moves while watched, or a ``pendingCheckpoint`` is in flight), and both record
every checkpoint they carry over in kinesis-batch's history (run ``import-kcl-<time>`` or
``export-kcl-<time>``). A checkpoint keeps its sub-sequence number, so a half-read KPL aggregate
continues at its next user record, on either side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kinesis_batch import ownership
from kinesis_batch.checkpoints.history import HistoryEntry, HistoryTable
from kinesis_batch.checkpoints.store import DynamoDBCheckpointStore
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError
from kinesis_batch.kcl.liveness import WATCH_SECONDS, ensure_stopped
from kinesis_batch.kcl.table import KclLease, counters, kcl_key, leases_of, read_leases
from kinesis_batch.leases.dynamodb import ConditionFailed, call_dynamodb
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.ownership.foreign import MULTI_STREAM_KEY
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import StreamDescription, list_shards

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient


@dataclass(frozen=True)
class Handover:
    """What one hand-over carried: ``checkpoints`` shard -> checkpoint, recorded as run ``run_id``."""

    run_id: str
    source: str
    target: str
    checkpoints: dict[str, str]

    def line(self) -> str:
        return f"{self.run_id}: {len(self.checkpoints)} checkpoints from {self.source} into {self.target}"


def import_kcl(
    kinesis: KinesisClient,
    store: LeaseStore,
    kcl_table: str,
    stream_name: str,
    *,
    who: str,
    watch_seconds: float = WATCH_SECONDS,
    sleep: Callable[[float], None] | None = None,
) -> Handover:
    """Create kinesis-batch's lease table ``store`` from the stopped KCL application's checkpoints."""
    claim = ownership.check(kinesis, store, stream_name)
    if store.table_exists() and store.list_leases():
        raise InvalidStateError(
            f"lease table {store.table_name} already holds checkpoints: import into a table of its own (--table), "
            "or reset it first"
        )
    dynamodb = store.client
    kcl = leases_of(claim.stream, read_leases(dynamodb, kcl_table), kcl_table)
    if not kcl:
        raise InvalidStateError(f"{kcl_table} holds no lease of stream {stream_name}: nothing to import")
    _refuse_pending(kcl, kcl_table)
    ensure_stopped(lambda: counters(dynamodb, kcl_table), kcl_table, **_watch(watch_seconds, sleep))
    lineage = Lineage.build(list_shards(kinesis, stream_name))
    leases = _our_leases(kcl, lineage)
    ownership.check_sequences(kinesis, claim.stream, kcl_table, leases)
    DynamoDBCheckpointStore(store).create_checkpoint_store_if_not_exists()
    ownership.mark(store, claim, marked_by=f"imported from KCL table {kcl_table} by {who}")
    for lease in leases:
        store.create_lease_if_not_exists(lease)
    moved = {lease.lease_key: lease.checkpoint for lease in leases}
    return _recorded(store, "import-kcl", moved, f"import-kcl from {kcl_table} by {who}", kcl_table, store.table_name)


def export_kcl(
    kinesis: KinesisClient,
    store: LeaseStore,
    kcl_table: str,
    stream_name: str,
    *,
    who: str,
    watch_seconds: float = WATCH_SECONDS,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] | None = None,
) -> Handover:
    """Write kinesis-batch's checkpoints into the stopped KCL application's table ``kcl_table``,
    leaving no lease owned, so that it starts where kinesis-batch stopped."""
    claim = ownership.check(kinesis, store, stream_name)
    ours = store.list_leases()
    now_ms = int((clock or _now)() * 1000)
    busy = sorted(lease.lease_key for lease in ours if lease.is_live(now_ms) or lease.pending_batch_id)
    if busy:
        raise InvalidStateError(
            f"{', '.join(busy)} of {store.table_name} are leased or have a batch pending: kinesis-batch is running "
            "there; let it finish and stop its schedule first"
        )
    unreadable = sorted(lease.lease_key for lease in ours if lease.checkpoint.value in ("LATEST", "AT_TIMESTAMP"))
    if unreadable:
        raise InvalidStateError(
            f"{', '.join(unreadable)} of {store.table_name} were never read (LATEST or AT_TIMESTAMP): a KCL "
            "application would skip what arrived since; run kinesis-batch once more first"
        )
    dynamodb = store.client
    kcl = read_leases(dynamodb, kcl_table)
    _refuse_pending(kcl, kcl_table)
    seen = ensure_stopped(lambda: counters(dynamodb, kcl_table), kcl_table, **_watch(watch_seconds, sleep))
    multi = any(MULTI_STREAM_KEY.match(lease.key) for lease in kcl)
    for lease in ours:
        key = kcl_key(claim.stream, lease.lease_key, multi_stream=multi)
        _write_kcl(dynamodb, kcl_table, key, lease, seen.get(key), claim.stream if multi else None)
    moved = {lease.lease_key: lease.checkpoint for lease in ours}
    return _recorded(store, "export-kcl", moved, f"export-kcl to {kcl_table} by {who}", store.table_name, kcl_table)


def _our_leases(kcl: list[KclLease], lineage: Lineage) -> list[Lease]:
    """KCL's checkpoints as kinesis-batch leases, and SHARD_END for the ancestors of those the
    KCL table no longer has (KCL deletes a parent's lease once its children started)."""
    had = {lease.shard_id for lease in kcl}
    done = {ancestor for lease in kcl if lease.shard_id in lineage for ancestor in lineage.ancestors(lease.shard_id)}
    leases = [
        Lease(
            lease.shard_id,
            checkpoint=lease.checkpoint,
            parent_shard_ids=lease.parents or frozenset(lineage.parents.get(lease.shard_id, ())),
            lineage_depth=lineage.depth(lease.shard_id) if lease.shard_id in lineage else 0,
        )
        for lease in kcl
    ]
    leases += [
        Lease(
            shard,
            checkpoint=Checkpoint.shard_end(),
            parent_shard_ids=frozenset(lineage.parents[shard]),
            lineage_depth=lineage.depth(shard),
        )
        for shard in sorted(done - had)
    ]
    return leases


def _write_kcl(
    dynamodb: DynamoDBClient, table: str, key: str, lease: Lease, counter: int | None, stream: StreamDescription | None
) -> None:
    """One KCL lease at ``lease``'s checkpoint, owned by nobody: an update fenced on the counter
    as last seen, or a new item where KCL has none."""
    checkpoint = {
        ":checkpoint": {"S": lease.checkpoint.value},
        ":sub": {"N": str(lease.checkpoint.sub_sequence_number)},
    }
    if counter is not None:
        request: dict[str, Any] = {
            "Key": {"leaseKey": {"S": key}},
            "UpdateExpression": "SET checkpoint = :checkpoint, checkpointSubSequenceNumber = :sub, "
            "ownerSwitchesSinceCheckpoint = :zero, leaseCounter = leaseCounter + :one "
            "REMOVE leaseOwner, pendingCheckpoint, pendingCheckpointSubSequenceNumber, pendingCheckpointState",
            "ConditionExpression": "leaseCounter = :seen",
            "ExpressionAttributeValues": {
                **checkpoint,
                ":zero": {"N": "0"},
                ":one": {"N": "1"},
                ":seen": {"N": str(counter)},
            },
        }
        write = lambda: dynamodb.update_item(TableName=table, **request)  # noqa: E731
    else:
        item: dict[str, Any] = {
            "leaseKey": {"S": key},
            "leaseCounter": {"N": "0"},
            "checkpoint": checkpoint[":checkpoint"],
            "checkpointSubSequenceNumber": checkpoint[":sub"],
            "ownerSwitchesSinceCheckpoint": {"N": "0"},
        }
        if lease.parent_shard_ids:
            item["parentShardId"] = {"SS": sorted(lease.parent_shard_ids)}
        if stream is not None:  # what KCL's multi-stream serializer writes beside the key
            item |= {"streamName": {"S": key.rsplit(":", 1)[0]}, "shardId": {"S": lease.lease_key}}
        write = lambda: dynamodb.put_item(  # noqa: E731
            TableName=table, Item=item, ConditionExpression="attribute_not_exists(leaseKey)"
        )
    try:
        call_dynamodb("UpdateItem" if counter is not None else "PutItem", table, write)
    except ConditionFailed as exc:
        raise InvalidStateError(
            f"{key} of {table} changed while exporting (a KCL worker started?): stop it and export again; the "
            "checkpoints written so far are kinesis-batch's, and exporting again writes them all"
        ) from exc


def _refuse_pending(kcl: list[KclLease], table: str) -> None:
    pending = sorted(lease.key for lease in kcl if lease.pending)
    if pending:
        raise InvalidStateError(
            f"{', '.join(pending)} of {table} have a pendingCheckpoint: a KCL worker is checkpointing; stop the "
            "application (and let it finish checkpointing) first"
        )


def _recorded(
    store: LeaseStore, kind: str, moved: dict[str, Checkpoint], owner: str, source: str, target: str
) -> Handover:
    """Record each checkpoint carried over in kinesis-batch's history."""
    now = datetime.now(UTC)
    run_id = f"{kind}-{now:%Y%m%dT%H%M%SZ}"
    history = HistoryTable(store.client, store.table_name)
    for shard, checkpoint in moved.items():
        history.record(HistoryEntry(shard, run_id, run_id, owner, now, checkpoint, checkpoint, 0))
    return Handover(run_id, source, target, {shard: str(checkpoint) for shard, checkpoint in moved.items()})


def _watch(seconds: float, sleep: Callable[[float], None] | None) -> dict[str, Any]:
    if seconds <= 0:
        raise IllegalArgumentError(f"--watch-seconds must be positive, not {seconds:g}")
    return {"seconds": seconds, **({"sleep": sleep} if sleep else {})}


def _now() -> float:
    return datetime.now(UTC).timestamp()


__all__ = ["Handover", "export_kcl", "import_kcl"]
