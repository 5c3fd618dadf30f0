"""The parent/child graph of a stream's shards (pure: data in, data out).

A split gives a shard two children that each name it as ``parent_shard_id``; a merge gives
one child that names both parents (``parent_shard_id`` and ``adjacent_parent_shard_id``).
Parents that retention already dropped from the listing are *missing*: their records are
gone, so they never block a child, but they are reported.

Depth: a shard with no known parent has depth 0, any other ``1 + max(depth of its parents)``.
For one hash key the shards that held it over time form a parent->child chain, so depth grows
strictly along it, and shards of equal depth never overlap in hash range. Depths recorded
earlier (``known_depths``, e.g. kept on the lease items) win over recomputation, so a shard's
depth does not change when retention drops its ancestors from the listing.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kinesis_batch.errors import LineageError
from kinesis_batch.shards.model import Shard


@dataclass(frozen=True)
class Lineage:
    """Built by :meth:`build`; read-only afterwards."""

    shards: Mapping[str, Shard]
    parents: Mapping[str, tuple[str, ...]]  # only parents present in the listing
    children: Mapping[str, tuple[str, ...]]
    missing_parents: Mapping[str, tuple[str, ...]]  # named by a shard, absent from the listing
    depths: Mapping[str, int]
    order: tuple[str, ...] = field(repr=False)  # topological: every parent before its children

    @classmethod
    def build(cls, shards: Iterable[Shard], known_depths: Mapping[str, int] | None = None) -> Lineage:
        by_id: dict[str, Shard] = {}
        for shard in shards:
            if shard.shard_id in by_id and by_id[shard.shard_id] != shard:
                raise LineageError(f"shard {shard.shard_id} is listed twice with different attributes")
            by_id[shard.shard_id] = shard
        known_depths = known_depths or {}

        parents: dict[str, tuple[str, ...]] = {}
        missing: dict[str, tuple[str, ...]] = {}
        children: dict[str, list[str]] = {shard_id: [] for shard_id in by_id}
        for shard_id, shard in by_id.items():
            if shard_id in shard.parent_ids:
                raise LineageError(f"shard {shard_id} names itself as its parent")
            parents[shard_id] = tuple(p for p in shard.parent_ids if p in by_id)
            gone = tuple(p for p in shard.parent_ids if p not in by_id)
            if gone:
                missing[shard_id] = gone
            for parent in parents[shard_id]:
                children[parent].append(shard_id)

        order = _topological_order(by_id, parents, children)
        depths: dict[str, int] = {}
        for shard_id in order:
            if shard_id in known_depths:
                depths[shard_id] = known_depths[shard_id]
                continue
            ancestors = [depths[p] for p in parents[shard_id]]
            ancestors += [known_depths[p] for p in missing.get(shard_id, ()) if p in known_depths]
            depths[shard_id] = 1 + max(ancestors) if ancestors else 0

        return cls(
            shards=by_id,
            parents=parents,
            children={k: tuple(sorted(v)) for k, v in children.items()},
            missing_parents=missing,
            depths=depths,
            order=order,
        )

    def __contains__(self, shard_id: object) -> bool:
        return shard_id in self.shards

    def __len__(self) -> int:
        return len(self.shards)

    def depth(self, shard_id: str) -> int:
        return self.depths[shard_id]

    def roots(self) -> list[str]:
        """Shards with no parent in the listing, in topological order."""
        return [s for s in self.order if not self.parents[s]]

    def leaves(self) -> list[str]:
        """Shards with no children yet (every open shard is one)."""
        return [s for s in self.order if not self.children[s]]

    def ancestors(self, shard_id: str) -> set[str]:
        seen: set[str] = set()
        stack = list(self.parents[shard_id])
        while stack:
            parent = stack.pop()
            if parent not in seen:
                seen.add(parent)
                stack.extend(self.parents[parent])
        return seen

    def readable(self, finished: Iterable[str]) -> list[str]:
        """Unfinished shards whose parents are all finished, in topological order.

        ``finished`` holds the shards read to SHARD_END. Missing parents count as finished.
        """
        done = set(finished)
        return [s for s in self.order if s not in done and all(p in done for p in self.parents[s])]

    def waves(self, shard_ids: Iterable[str]) -> list[list[str]]:
        """``shard_ids`` grouped by depth, shallowest first; each group sorted by shard id."""
        groups: dict[int, list[str]] = {}
        for shard_id in shard_ids:
            groups.setdefault(self.depths[shard_id], []).append(shard_id)
        return [sorted(groups[d]) for d in sorted(groups)]


def _topological_order(
    by_id: Mapping[str, Shard],
    parents: Mapping[str, Sequence[str]],
    children: Mapping[str, Sequence[str]],
) -> tuple[str, ...]:
    """Kahn's algorithm, ties broken by shard id so the order is deterministic."""
    pending = {s: len(parents[s]) for s in by_id}
    ready = [s for s, n in pending.items() if n == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        shard_id = heapq.heappop(ready)
        order.append(shard_id)
        for child in children[shard_id]:
            pending[child] -= 1
            if pending[child] == 0:
                heapq.heappush(ready, child)
    if len(order) != len(by_id):
        stuck = sorted(s for s, n in pending.items() if n > 0)
        raise LineageError(f"shard lineage has a cycle through {', '.join(stuck[:5])}")
    return tuple(order)
