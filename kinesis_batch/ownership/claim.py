"""Whose lease table this is, as a claim: :func:`check` reads the table's mark and refuses a
table that is not this stream's; :func:`mark` marks a new or adopted one; :func:`remark` marks a
table again for the stream as it is now (a reset)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING

from kinesis_batch.aws import Handler, aws_call
from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.errors import ForeignTableError, StreamRecreatedError
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.ownership.foreign import looks_like
from kinesis_batch.ownership.table_mark import FORMAT_VERSION, TableMark, read_mark, write_mark
from kinesis_batch.shards.listing import StreamDescription, describe_stream, list_shards
from kinesis_batch.shards.model import stream_argument

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient


@dataclass(frozen=True)
class Claim:
    """What :func:`check` found: the stream, the table's mark as read (None: a new table, or one
    to adopt), and whether the table holds an earlier kinesis-batch's leases to adopt."""

    stream: StreamDescription
    table: str
    mark: TableMark | None
    adopt: bool = False

    def mark_now(self, marked_by: str, output: str | None = None, dead_letter_output: str | None = None) -> TableMark:
        """The mark this table gets now, for this stream's incarnation (and the outputs it
        publishes to: kinesis_batch.binding)."""
        stream = self.stream
        now = datetime.now(UTC)
        return TableMark(stream.name, stream.arn, stream.created_at, now, marked_by, FORMAT_VERSION, output,
                         dead_letter_output)  # fmt: skip


def check(
    kinesis: KinesisClient,
    store: LeaseStore,
    stream_name: str,
    *,
    recreated_ok: bool = False,
    described: StreamDescription | None = None,
) -> Claim:
    """Read-only. Raises ForeignTableError or StreamRecreatedError (unless ``recreated_ok``: the
    reset that is its way out) with one line; StreamNotFoundError for an unknown stream.
    ``described``: the stream as the caller described it already (else described here)."""
    stream = described or describe_stream(kinesis, stream_name)
    table = store.table_name
    mark = read_mark(HistoryTable(store.client, table))
    if mark is not None:
        _check_mark(mark, stream, table, recreated_ok)
        return Claim(stream, table, mark)
    if not store.table_exists():
        return Claim(stream, table, None)
    items = store.items()
    if not items:
        return Claim(stream, table, None)
    looks = looks_like(items)
    if looks is not None:
        raise ForeignTableError(
            f"lease table {table} holds {len(items)} leases but is not kinesis-batch's: it looks like {looks}; "
            "nothing in it was touched. Name a table of this consumer's own with --table "
            f"(default kinesis-batch-{stream.name}), or hand a stopped KCL application's over with import-kcl"
        )
    check_sequences(kinesis, stream, table, store.list_leases())
    return Claim(stream, table, None, adopt=True)


def mark(
    store: LeaseStore,
    claim: Claim,
    progress: Callable[[str], None] = lambda message: None,
    *,
    marked_by: str = "",
    outputs: tuple[str, str | None] | None = None,
) -> Claim:
    """Mark a new or adopted table once its tables exist (conditional: one mark, whoever is
    first; a table marked meanwhile by another process is checked as read). ``marked_by``
    says how, for the history (default: created, or adopted); ``outputs``: the output (and
    dead-letter output) the first mark records (kinesis_batch.binding). Returns the claim with
    the table's mark as it now is."""
    if claim.mark is not None:
        return claim
    history = HistoryTable(store.client, store.table_name)
    marked_by = marked_by or ("adopted" if claim.adopt else "created")
    wanted = claim.mark_now(marked_by, *(outputs or (None, None)))
    if not write_mark(history, wanted):
        other = read_mark(history)
        if other is not None:
            _check_mark(other, claim.stream, store.table_name, recreated_ok=False)
        return replace(claim, mark=other, adopt=False)
    if claim.adopt:
        progress(
            f"adopted lease table {store.table_name}, made by an earlier kinesis-batch: its leases and checkpoints "
            f"are stream {claim.stream.name}'s; marked as this consumer's"
        )
    return replace(claim, mark=wanted, adopt=False)


def remark(store: LeaseStore, claim: Claim, marked_by: str) -> bool:
    """Mark the table again for the stream as it is now (its current incarnation), replacing the
    mark ``claim`` read; False, and nothing written, when the mark changed since it was read. The
    new mark records no output: the next run's is recorded (kinesis_batch.binding)."""
    history = HistoryTable(store.client, store.table_name)
    return write_mark(history, claim.mark_now(marked_by), replacing=claim.mark)


def _check_mark(mark: TableMark, stream: StreamDescription, table: str, recreated_ok: bool) -> None:
    if mark.format_version > FORMAT_VERSION:
        raise ForeignTableError(
            f"lease table {table} is of kinesis-batch's table format {mark.format_version}, newer than this "
            f"install's {FORMAT_VERSION}: upgrade kinesis-batch to use it; nothing was changed"
        )
    if (mark.stream, mark.stream_arn) != (stream.name, stream.arn):
        raise ForeignTableError(
            f"lease table {table} is stream {mark.stream}'s ({mark.stream_arn}), not {stream.name}'s "
            f"({stream.arn}); nothing in it was touched. Name {stream.name}'s own table with --table "
            f"(default kinesis-batch-{stream.name})"
        )
    if mark.stream_created_at != stream.created_at and not recreated_ok:
        raise StreamRecreatedError(
            f"stream {stream.name} was created again at {stream.created_at.isoformat()}, after lease table {table} "
            f"was made for the stream created at {mark.stream_created_at.isoformat()}: its checkpoints are the "
            f"old stream's. To start over: kinesis-batch reset --stream {stream.name} --table {table} "
            "--start trim_horizon --yes (the old checkpoints stay in the history)"
        )


def check_sequences(kinesis: KinesisClient, stream: StreamDescription, table: str, leases: list[Lease]) -> None:
    """Every stored sequence number is one of this stream's: the stream hands out an iterator
    after it (AWS refuses a sequence number of another stream or incarnation)."""
    shards = {shard.shard_id for shard in list_shards(kinesis, stream.stream_id)}
    for lease in leases:
        for checkpoint in (lease.checkpoint, lease.pending_checkpoint):
            if checkpoint is None or checkpoint.sentinel is not None:
                continue
            where = f"{table}: shard {lease.lease_key}'s checkpoint {checkpoint.value}"
            if lease.lease_key not in shards:
                raise ForeignTableError(
                    f"{where} is not of stream {stream.name}, which has no such shard: {table} is another stream's; "
                    "nothing in it was touched"
                )
            foreign = ForeignTableError(
                f"{where} did not come from stream {stream.name} (another stream's, or one deleted and created "
                "again): nothing in it was touched"
            )
            aws_call(
                "GetShardIterator",
                stream.name,
                partial(
                    kinesis.get_shard_iterator,
                    **stream_argument(stream.stream_id),
                    ShardId=lease.lease_key,
                    ShardIteratorType="AFTER_SEQUENCE_NUMBER",
                    StartingSequenceNumber=checkpoint.value,
                ),
                codes={"InvalidArgumentException": _instead(foreign)},
            )


def _instead(error: BaseException) -> Handler:
    return lambda _: error


__all__ = ["Claim", "check", "check_sequences", "mark", "remark"]
