"""What one run reads: shards + lineage + leases + bound -> RunPlan (pure: no I/O).

Rules (docs/architecture.md, "Parent before child"):
- A shard whose checkpoint is SHARD_END is finished and never planned again.
- A shard held live by another worker is skipped and reported; its descendants wait.
- A shard with a pending batch needs recovery first; planning refuses to plan around it.
- Every other shard is planned when each parent is finished or itself planned, with those
  planned parents named (``planned_parents``): the read starts a child once each of them
  reached SHARD_END in the same Spark task, and leaves it unread when one stopped short at the
  run's bound. Its wave is 0 when all parents are finished, else one more than its deepest
  planned parent: waves are the plan's parent-first order (the commit record, the commits,
  ``kinesis-batch plan``), not barriers between reads.
- A shard without a lease starts at the run's initial position on the stream's first run,
  and at TRIM_HORIZON afterwards: shards born of later reshards must be read from their start
  (the KCL does the same), or their first records would be lost.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kinesis_batch.leases.model import Lease
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.reader import ReadResult
from kinesis_batch.storage.records import ShardCommit


@dataclass(frozen=True)
class ShardRange:
    """Read ``shard_id`` after ``start`` up to the run's bound (and its end if closed)."""

    shard_id: str
    start: Checkpoint
    depth: int
    wave: int
    closed: bool
    planned_parents: tuple[str, ...] = ()  # parents that must reach SHARD_END earlier in this run


@dataclass(frozen=True)
class RunPlan:
    stream: str
    until: datetime | None
    ranges: tuple[ShardRange, ...]  # by wave, then shard id
    finished: tuple[str, ...] = ()
    leased_elsewhere: Mapping[str, str] = field(default_factory=dict)  # shard -> live owner
    waiting: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # shard -> parents blocking it
    pending: Mapping[str, str] = field(default_factory=dict)  # shard -> pending batch id (recover first)
    new_leases: tuple[Lease, ...] = ()  # lease items this plan needs created

    @property
    def shard_ids(self) -> list[str]:
        return [r.shard_id for r in self.ranges]

    def waves(self) -> list[list[ShardRange]]:
        out: list[list[ShardRange]] = []
        for shard_range in self.ranges:
            while len(out) <= shard_range.wave:
                out.append([])
            out[shard_range.wave].append(shard_range)
        return out

    def range(self, shard_id: str) -> ShardRange:
        for shard_range in self.ranges:
            if shard_range.shard_id == shard_id:
                return shard_range
        raise KeyError(shard_id)


def plan_run(
    stream: str,
    lineage: Lineage,
    leases: Mapping[str, Lease],
    *,
    worker_id: str,
    now_ms: int,
    initial: Checkpoint,
    until: datetime | None = None,
    shard_filter: frozenset[str] | None = None,
    batch_id: str | None = None,
) -> RunPlan:
    """Plan a run of ``worker_id`` at ``now_ms``. ``leases`` maps lease key -> lease.

    ``shard_filter`` restricts the plan to some shards (their unplanned parents block them).
    A lease pending ``batch_id`` carries this run's own mark (made as it took the lease), not a
    batch to recover.
    """
    first_run = not leases
    new_leases: list[Lease] = []
    finished: list[str] = []
    finished_set: set[str] = set()
    elsewhere: dict[str, str] = {}
    waiting: dict[str, tuple[str, ...]] = {}
    pending: dict[str, str] = {}
    waves: dict[str, int] = {}
    ranges: list[ShardRange] = []

    for shard_id in lineage.order:  # parents before children
        lease = leases.get(shard_id)
        if lease is None:
            start = initial if first_run else Checkpoint.trim_horizon()
            lease = Lease(
                shard_id,
                checkpoint=start,
                parent_shard_ids=frozenset(lineage.shards[shard_id].parent_ids),
                lineage_depth=lineage.depth(shard_id),
            )
            new_leases.append(lease)
        if lease.checkpoint.is_shard_end:
            finished.append(shard_id)
            finished_set.add(shard_id)
            continue
        if shard_filter is not None and shard_id not in shard_filter:
            continue
        if lease.lease_owner not in (None, worker_id) and lease.is_live(now_ms):
            elsewhere[shard_id] = lease.lease_owner or ""
            continue
        if lease.pending_batch_id not in (None, batch_id):
            pending[shard_id] = str(lease.pending_batch_id)
            continue
        blocking = tuple(p for p in lineage.parents[shard_id] if p not in finished_set and p not in waves)
        if blocking:
            waiting[shard_id] = blocking
            continue
        planned_parents = tuple(p for p in lineage.parents[shard_id] if p in waves)
        wave = 1 + max(waves[p] for p in planned_parents) if planned_parents else 0
        waves[shard_id] = wave
        ranges.append(
            ShardRange(
                shard_id=shard_id,
                start=lease.checkpoint,
                depth=lineage.depth(shard_id),
                wave=wave,
                closed=lineage.shards[shard_id].closed,
                planned_parents=planned_parents,
            )
        )
    ranges.sort(key=lambda r: (r.wave, r.shard_id))
    return RunPlan(
        stream=stream,
        until=until,
        ranges=tuple(ranges),
        finished=tuple(finished),
        leased_elsewhere=elsewhere,
        waiting=waiting,
        pending=pending,
        new_leases=tuple(new_leases),
    )


def readable(ranges: Sequence[ShardRange], held: Collection[str]) -> tuple[ShardRange, ...]:
    """The ranges a worker holding ``held`` can read: held, with every planned parent readable
    too (a step resumed elsewhere may hold fewer leases than its plan names). Plan order."""
    out: list[ShardRange] = []
    ok: set[str] = set()
    for shard_range in ranges:
        if shard_range.shard_id in held and all(p in ok for p in shard_range.planned_parents):
            out.append(shard_range)
            ok.add(shard_range.shard_id)
    return tuple(out)


def parents_ended(shard_range: ShardRange, results: Mapping[str, ReadResult]) -> bool:
    """Whether every planned parent of the range was read to SHARD_END (so it must be read)."""
    return all(p in results and results[p].reached_shard_end for p in shard_range.planned_parents)


def generations(shards: Sequence[str], parents: Mapping[str, Collection[str]]) -> list[list[str]]:
    """``shards`` (parents before children) in layers: each shard one layer after the last of
    its parents among ``shards``. A layer's checkpoints may move side by side."""
    layer: dict[str, int] = {}
    for shard in shards:
        layer[shard] = 1 + max((layer[p] for p in parents.get(shard, ()) if p in layer), default=-1)
    out: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for shard in shards:
        out[layer[shard]].append(shard)
    return out


def plan_to_json(plan: RunPlan) -> dict[str, Any]:
    """The part of a plan later steps need (the run's manifest), as JSON-able values."""
    return {
        "stream": plan.stream,
        "until": plan.until.isoformat() if plan.until else None,
        "finished": list(plan.finished),
        "ranges": [
            {
                "shard_id": r.shard_id,
                "start": r.start.to_json(),
                "depth": r.depth,
                "wave": r.wave,
                "closed": r.closed,
                "planned_parents": list(r.planned_parents),
            }
            for r in plan.ranges
        ],
    }


def plan_from_json(body: dict[str, Any]) -> RunPlan:
    return RunPlan(
        stream=body["stream"],
        until=datetime.fromisoformat(body["until"]) if body["until"] else None,
        finished=tuple(body["finished"]),
        ranges=tuple(
            ShardRange(
                shard_id=r["shard_id"],
                start=Checkpoint.from_json(r["start"]),
                depth=int(r["depth"]),
                wave=int(r["wave"]),
                closed=bool(r["closed"]),
                planned_parents=tuple(r["planned_parents"]),
            )
            for r in body["ranges"]
        ),
    )


def plan_report(plan: RunPlan) -> dict[str, Any]:
    """The plan as ``kinesis-batch plan --json`` prints it: what a run would read, and why not the rest."""
    return {
        "stream": plan.stream,
        "until": plan.until.isoformat() if plan.until else None,
        "ranges": [
            {
                "shard_id": r.shard_id,
                "start": str(r.start),
                "wave": r.wave,
                "lineage_depth": r.depth,
                "closed": r.closed,
                "after_parents": list(r.planned_parents),
            }
            for r in plan.ranges
        ],
        "finished": list(plan.finished),
        "leased_elsewhere": dict(plan.leased_elsewhere),
        "waiting": {shard: list(parents) for shard, parents in plan.waiting.items()},
        "pending_recovery": dict(plan.pending),
    }


def shard_commit(shard_range: ShardRange, result: ReadResult) -> ShardCommit | None:
    """Where a read moved a shard: SHARD_END, the last record read, or nowhere (None)."""
    if result.reached_shard_end:
        end = Checkpoint.shard_end()
    elif result.last_sequence_number is not None:
        end = Checkpoint.at(result.last_sequence_number, result.last_sub_sequence_number or 0)
    else:
        return None
    if end == shard_range.start:
        return None
    return ShardCommit(
        shard_range.shard_id,
        shard_range.start,
        end,
        result.records,
        result.reached_shard_end,
        result.trimmed_after,
        result.lag_at_start_ms,
        bytes=result.bytes,
        millis_behind_latest=result.millis_behind_latest,
    )
