"""Which shard ranges one Spark task reads together (pure: no I/O).

A task reads a group of ranges side by side, each paced on its own, and reads a child as soon
as its parents in the group reached SHARD_END: reading is waiting, so one task slot can keep
many shards at Kinesis' limit, and no child waits for unrelated shards (no wave barrier).

Rules:
- A lineage family (ranges joined by ``planned_parents``: a split, a merge, and what came of
  them in this run) is never split across tasks, so a child always finds its parents' ends
  in its own task. A family larger than the group size makes a task of its own.
- ``shards_per_task`` set: as many groups as it takes to hold every range at that size.
  Unset: one group per task slot, so every shard is read at once with no task queued.
- Families go largest first into the group holding the fewest ranges so far (ties: the
  earlier group), so groups come out even and the result does not depend on dict order.
- Inside a group, ranges keep the plan's order (wave, then shard id): parents first.
"""

from __future__ import annotations

from collections.abc import Sequence

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.planning import ShardRange


def group_ranges(
    ranges: Sequence[ShardRange], *, slots: int, shards_per_task: int | None = None
) -> tuple[tuple[ShardRange, ...], ...]:
    """Split ``ranges`` (in plan order) into the groups the Spark tasks read; no empty group."""
    if slots < 1:
        raise IllegalArgumentError(f"a SparkContext needs at least one task slot, not {slots}")
    if shards_per_task is not None and shards_per_task < 1:
        raise IllegalArgumentError(f"--shards-per-task must be at least 1, not {shards_per_task}")
    if not ranges:
        return ()
    families = lineage_families(ranges)
    wanted = -(-len(ranges) // shards_per_task) if shards_per_task else slots
    groups: list[list[ShardRange]] = [[] for _ in range(min(wanted, len(families)))]
    for family in sorted(families, key=len, reverse=True):  # stable: equal sizes keep plan order
        smallest = min(range(len(groups)), key=lambda index: len(groups[index]))
        groups[smallest].extend(family)
    order = {r.shard_id: index for index, r in enumerate(ranges)}
    return tuple(tuple(sorted(group, key=lambda r: order[r.shard_id])) for group in groups)


def lineage_families(ranges: Sequence[ShardRange]) -> list[list[ShardRange]]:
    """The ranges joined by planned parent links, each family in plan order, families ordered
    by their first range."""
    root = {r.shard_id: r.shard_id for r in ranges}

    def find(shard_id: str) -> str:
        while root[shard_id] != shard_id:
            root[shard_id] = root[root[shard_id]]
            shard_id = root[shard_id]
        return shard_id

    for shard_range in ranges:
        for parent in shard_range.planned_parents:
            if parent in root:
                root[find(shard_range.shard_id)] = find(parent)
    families: dict[str, list[ShardRange]] = {}
    for shard_range in ranges:
        families.setdefault(find(shard_range.shard_id), []).append(shard_range)
    return list(families.values())
