"""Grouping is pure: the plan's ranges and the task slots in, the groups the tasks read out."""

from __future__ import annotations

import pytest

from kinesis_batch import Checkpoint
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.grouping import group_ranges, lineage_families
from kinesis_batch.planning import ShardRange


def r(shard_id: str, *parents: str, wave: int = 0) -> ShardRange:
    return ShardRange(shard_id, Checkpoint.trim_horizon(), depth=wave, wave=wave, closed=False, planned_parents=parents)


# A diamond (A splits into B and C, which merge into D), and four unrelated shards.
DIAMOND = [r("A"), r("B", "A", wave=1), r("C", "A", wave=1), r("D", "B", "C", wave=2)]
LONE = [r("E"), r("F"), r("G"), r("H")]
PLAN = sorted(DIAMOND + LONE, key=lambda x: (x.wave, x.shard_id))

# name -> (ranges, slots, shards per task, expected groups as shard ids)
CASES = {
    "one slot: everything in one task, parents first": (PLAN, 1, None, [["A", "E", "F", "G", "H", "B", "C", "D"]]),
    "two slots: the diamond stays whole, the rest evens the count": (
        PLAN,
        2,
        None,
        [["A", "B", "C", "D"], ["E", "F", "G", "H"]],
    ),
    "more slots than families: one family a task": (
        PLAN,
        16,
        None,
        [["A", "B", "C", "D"], ["E"], ["F"], ["G"], ["H"]],
    ),
    "shards per task sets the count: 8 ranges by 3 make 3 tasks": (
        PLAN,
        2,
        3,
        [["A", "B", "C", "D"], ["E", "G"], ["F", "H"]],
    ),
    "one shard per task: today's one task a shard, families kept whole": (
        LONE,
        2,
        1,
        [["E"], ["F"], ["G"], ["H"]],
    ),
    "a merge joins two families through its parents": (
        [r("P"), r("Q"), r("X"), r("M", "P", "Q", wave=1)],
        3,
        None,
        [["P", "Q", "M"], ["X"]],
    ),
    "nothing to read: no task": ([], 4, None, []),
}


@pytest.mark.parametrize("case", CASES)
def test_groups_keep_families_whole_and_parents_first(case: str) -> None:
    ranges, slots, per_task, expected = CASES[case]
    groups = group_ranges(ranges, slots=slots, shards_per_task=per_task)
    assert [[x.shard_id for x in group] for group in groups] == expected


def test_every_range_is_in_exactly_one_group_for_any_slot_count() -> None:
    chain = [r(f"s{i}") for i in range(10)] + [r("c", "s0", wave=1)]
    for slots in range(1, 14):
        groups = group_ranges(chain, slots=slots)
        ids = [x.shard_id for group in groups for x in group]
        assert sorted(ids) == sorted(x.shard_id for x in chain)
        assert len(groups) == min(slots, 10) and all(groups)
        sizes = [len(group) for group in groups]
        assert max(sizes) - min(sizes) <= 1 + 1  # even, but for the family of two


def test_a_parent_outside_the_plan_does_not_join_families() -> None:
    # "Z" finished in an earlier run: it is no planned range, so it links nothing.
    assert [[x.shard_id for x in f] for f in lineage_families([r("A", "Z"), r("B", "Z")])] == [["A"], ["B"]]


@pytest.mark.parametrize(("slots", "per_task"), [(0, None), (2, 0), (2, -1)])
def test_impossible_sizes_are_refused(slots: int, per_task: int | None) -> None:
    with pytest.raises(IllegalArgumentError):
        group_ranges(PLAN, slots=slots, shards_per_task=per_task)
