"""Which output a consumer publishes to: recorded in its lease table's mark
(kinesis_batch.ownership.table_mark), checked at every run's start, moved only when asked.

A lease table's checkpoints say how far the consumer's output holds the stream. A run that
named another output would land only what arrived since, and that output would silently lack
everything before. So:

- :func:`check` (read-only, before anything is written) refuses a run whose output (or
  dead-letter output) is not the one the mark names, in one line naming both, unless the run
  moves it (``--move-output``), or nothing was ever published to it (:func:`progressed`: a
  first run that failed before its publish left no checkpoint and no pending batch, so the
  corrected output lacks nothing and is bound instead);
- :func:`bind` (once the table pair exists) records the output in the mark: on a new table with
  its first mark; on a table marked before outputs were recorded, adopted with one line; on a
  move, with a history item that keeps both outputs and the checkpoints the new output starts
  from (:func:`moves`, which ``status`` shows).

Every write is conditional on the mark as read: of two runs binding at once one wins, and the
other checks again against what won. A backfill with a lease table of its own binds that table
to its own output; one that moves the main checkpoints into its own output leaves the main
table's binding alone (``RunConfig.output_binding`` "none").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.config import KEEP, MOVE, NONE, RunConfig
from kinesis_batch.errors import ForeignOutputError, InvalidStateError
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.ownership.table_mark import MARK_KEY, TableMark, read_mark, write_mark

MOVE_PREFIX = "#output-move/"  # the history's move items: leaseKey MARK_KEY's, commitId MOVE_PREFIX + time


@dataclass(frozen=True)
class Outputs:
    """A run's outputs, as asset URIs (kinesis_batch.output.Output.asset_uri)."""

    output: str
    dead_letter_output: str | None = None

    @classmethod
    def of(cls, config: RunConfig) -> Outputs:
        output = config.destination
        if not config.decoding.decoding:
            return cls(output.asset_uri)
        return cls(output.asset_uri, config.settings.dead_letter_destination.asset_uri)

    def recorded_in(self, mark: TableMark | None) -> bool:
        """``mark`` records these outputs already (nothing to write)."""
        return (
            mark is not None
            and mark.output == self.output
            and (self.dead_letter_output in (None, mark.dead_letter_output))
        )


@dataclass(frozen=True)
class OutputMove:
    """One recorded move: from which output to which, when, by whom, and the checkpoints the new
    output started from (shard -> checkpoint)."""

    moved_at: datetime
    moved_by: str
    from_output: str
    to_output: str
    checkpoints: dict[str, str]

    def to_item(self) -> dict[str, Any]:
        return {
            "leaseKey": MARK_KEY["leaseKey"],
            "commitId": {"S": f"{MOVE_PREFIX}{self.moved_at.isoformat()}"},
            "movedBy": {"S": self.moved_by},
            "fromOutput": {"S": self.from_output},
            "toOutput": {"S": self.to_output},
            "checkpoints": {"M": {shard: {"S": value} for shard, value in self.checkpoints.items()}},
        }

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> OutputMove:
        return cls(
            moved_at=datetime.fromisoformat(item["commitId"]["S"].removeprefix(MOVE_PREFIX)),
            moved_by=item["movedBy"]["S"],
            from_output=item["fromOutput"]["S"],
            to_output=item["toOutput"]["S"],
            checkpoints={shard: value["S"] for shard, value in item["checkpoints"]["M"].items()},
        )


def progressed(leases: Iterable[Lease]) -> bool:
    """Pure. Whether the output bound may hold anything of the stream: a checkpoint moved past
    its start (a sequence number, SHARD_END), or a batch is pending (it may be published)."""
    return any(
        lease.pending_batch_id is not None or (lease.checkpoint is not None and not lease.checkpoint.is_start)
        for lease in leases
    )


def check(
    mark: TableMark | None, outputs: Outputs, table: str, *, binding: str = KEEP, progressed: bool = True
) -> None:
    """Pure. Raise ForeignOutputError unless ``outputs`` may publish for the table ``mark`` is
    of: no output recorded yet, the same one, a move (``binding`` MOVE) or none (NONE), or a
    table whose output holds nothing (not ``progressed``)."""
    if binding != KEEP or mark is None or not progressed:
        return
    for what, bound, asked in _pairs(mark, outputs):
        raise ForeignOutputError(
            f"lease table {table} publishes to {bound}, not {asked}: its checkpoints say how far {bound} holds "
            f"the stream, so {asked} would silently lack everything before. Name {bound} again with --output, "
            f"or move this consumer's {what} on purpose with --move-output (its checkpoints stay)"
        )


def _pairs(mark: TableMark, outputs: Outputs) -> list[tuple[str, str, str]]:
    """(what, the recorded output, the asked one) where they differ (both known)."""
    pairs = [("output", mark.output, outputs.output), ("dead-letter output", mark.dead_letter_output,
             outputs.dead_letter_output)]  # fmt: skip
    return [(what, bound, asked) for what, bound, asked in pairs if bound and asked and bound != asked]


def bind(
    store: LeaseStore,
    outputs: Outputs,
    *,
    binding: str,
    worker_id: str,
    seen: TableMark | None = None,
    progressed: bool = True,
    progress: Callable[[str], None] = lambda line: None,
) -> None:
    """Record ``outputs`` in the table's mark (see the module docstring); the mark must exist.
    Checks again against a mark another run wrote meanwhile. ``seen``: the mark as the run's
    check read it (one that records these outputs already needs no read); ``progressed``: as
    :func:`progressed` said of the table's leases (not: the outputs are bound anew, no move)."""
    if binding == NONE or (binding == KEEP and outputs.recorded_in(seen)):
        return
    history = HistoryTable(store.client, store.table_name)
    for _ in range(8):  # a lost conditional write: read again and decide again
        mark = read_mark(history)
        if mark is None:
            raise InvalidStateError(f"lease table {store.table_name} has no mark to record its output in")
        check(mark, outputs, store.table_name, binding=binding, progressed=progressed)
        if outputs.recorded_in(mark):
            return
        # What differs got past check: moved on purpose (MOVE), or bound anew (KEEP: nothing published).
        rebound, moved = (_pairs(mark, outputs), []) if binding == KEEP else ([], _pairs(mark, outputs))
        if moved:
            _record_move(history, store, *moved[0][1:], worker_id)
        wanted = replace(
            mark,
            output=outputs.output,
            dead_letter_output=outputs.dead_letter_output or mark.dead_letter_output,
            marked_at=datetime.now(UTC),
        )
        if not write_mark(history, wanted, replacing=mark):
            continue
        table = store.table_name
        for what, bound, asked in rebound:
            progress(f"lease table {table} now publishes its {what} to {asked}: nothing was ever published to {bound}")
        for what, bound, asked in moved:
            progress(f"moved the {what} of lease table {table} from {bound} to {asked}; it starts at the checkpoints")
        if not moved and not rebound and mark.output is None:
            progress(
                f"lease table {table} now records its output, {outputs.output} (it was made before kinesis-batch "
                "recorded outputs): a run naming another output is refused from now on"
            )
        return
    raise InvalidStateError(f"lease table {store.table_name}: its mark kept changing while recording the output")


def _record_move(history: HistoryTable, store: LeaseStore, old: str, new: str, worker: str) -> None:
    checkpoints = {lease.lease_key: str(lease.checkpoint) for lease in store.list_leases()}
    history.put_once(OutputMove(datetime.now(UTC), worker, old, new, checkpoints).to_item())


def moves(history: HistoryTable) -> list[OutputMove]:
    """The recorded moves of a table's output, oldest first."""
    return [OutputMove.from_item(item) for item in history.items_under(MARK_KEY["leaseKey"]["S"], MOVE_PREFIX)]


__all__ = ["MOVE", "OutputMove", "Outputs", "bind", "check", "moves", "progressed"]
