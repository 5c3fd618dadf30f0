"""Where a backfill starts, per shard. Start positions:

- ``trim_horizon``: everything the stream still holds;
- ``at_timestamp=ISO8601``: records that arrived from then on;
- ``run=RUN_ID``: the checkpoints of the main table as they were before run RUN_ID committed
  (from the checkpoint history), so that run's records and all later ones are read again;
- ``after_sequence=NUMBER``: after one record (with a single shard selected).
"""

from __future__ import annotations

from collections.abc import Iterable

from kinesis_batch.checkpoints.history import HistoryEntry, HistoryTable
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError
from kinesis_batch.parsers import parse_initial_position
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lineage import Lineage


def start_checkpoints(
    start: str, lineage: Lineage, shards: Iterable[str], history: HistoryTable | None
) -> dict[str, Checkpoint]:
    """The checkpoint each selected shard's backfill starts from."""
    selected = sorted(shards)
    unknown = [s for s in selected if s not in lineage]
    if unknown:
        raise IllegalArgumentError(f"shards: {', '.join(unknown)} are not shards of this stream")
    kind, _, argument = start.strip().partition("=")
    if kind == "run":
        if not argument:
            raise IllegalArgumentError("start run=RUN_ID needs a run id (see kinesis-batch history)")
        if history is None:
            raise InvalidStateError(f"start run={argument}: no run has committed on this stream's main lease table yet")
        return _before_run(argument, selected, history)
    if kind == "after_sequence":
        if len(selected) != 1:
            raise IllegalArgumentError("start after_sequence=NUMBER needs exactly one shard selected")
        return {selected[0]: Checkpoint.at(argument)}
    try:
        position = parse_initial_position(start)
    except IllegalArgumentError:
        raise IllegalArgumentError(
            f"start: {start!r} is not trim_horizon, at_timestamp=ISO8601, run=RUN_ID or after_sequence=NUMBER"
        ) from None
    if position.sentinel is not None and position.value == "LATEST":
        raise IllegalArgumentError("start: latest reads nothing old; a backfill starts in the past")
    return dict.fromkeys(selected, position)


def _before_run(run_id: str, shards: list[str], history: HistoryTable) -> dict[str, Checkpoint]:
    entries = {e.lease_key: e for e in history.for_run(run_id)}
    if not entries:
        raise InvalidStateError(f"no checkpoint history for run {run_id!r} (see kinesis-batch history)")
    cutoff = min(e.committed_at for e in entries.values())
    starts: dict[str, Checkpoint] = {}
    for shard in shards:
        if shard in entries:
            starts[shard] = entries[shard].from_checkpoint
            continue
        earlier: list[HistoryEntry] = [e for e in history.for_shard(shard) if e.committed_at < cutoff]
        starts[shard] = earlier[-1].to_checkpoint if earlier else Checkpoint.trim_horizon()
    return starts
