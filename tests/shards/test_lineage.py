"""Lineage is pure: shard lists in, graph out. Tables of cases, no endpoints."""

from __future__ import annotations

import itertools

import pytest

from kinesis_batch import Lineage, LineageError, Shard


def shard(shard_id: str, parent: str | None = None, adjacent: str | None = None, *, closed: bool = False) -> Shard:
    return Shard(shard_id, parent, adjacent, ending_sequence_number="100" if closed else None)


# name -> (shards, expected depths, expected children)
CASES = {
    "single open shard": (
        [shard("A")],
        {"A": 0},
        {"A": ()},
    ),
    "split": (
        [shard("A", closed=True), shard("B", "A"), shard("C", "A")],
        {"A": 0, "B": 1, "C": 1},
        {"A": ("B", "C"), "B": (), "C": ()},
    ),
    "merge": (
        [shard("A", closed=True), shard("B", closed=True), shard("C", "A", "B")],
        {"A": 0, "B": 0, "C": 1},
        {"A": ("C",), "B": ("C",), "C": ()},
    ),
    "diamond: split then merge": (
        [shard("A", closed=True), shard("B", "A", closed=True), shard("C", "A", closed=True), shard("D", "B", "C")],
        {"A": 0, "B": 1, "C": 1, "D": 2},
        {"A": ("B", "C"), "B": ("D",), "C": ("D",), "D": ()},
    ),
    "merge of shards at different depths takes the deeper one": (
        [
            shard("A", closed=True),
            shard("B", closed=True),
            shard("C", "A", closed=True),
            shard("D", "A"),
            shard("E", "C", "B"),
        ],
        {"A": 0, "B": 0, "C": 1, "D": 1, "E": 2},
        {"A": ("C", "D"), "B": ("E",), "C": ("E",), "D": (), "E": ()},
    ),
    "parent dropped by retention": (
        [shard("B", "GONE"), shard("C", "GONE")],
        {"B": 0, "C": 0},
        {"B": (), "C": ()},
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_depths_and_children_follow_splits_and_merges(case: str) -> None:
    shards, depths, children = CASES[case]
    lineage = Lineage.build(shards)
    assert dict(lineage.depths) == depths
    assert dict(lineage.children) == children


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_order_puts_every_parent_before_its_children(case: str) -> None:
    shards, _, _ = CASES[case]
    lineage = Lineage.build(list(reversed(shards)))  # listing order must not matter
    position = {s: i for i, s in enumerate(lineage.order)}
    for child, parents in lineage.parents.items():
        for parent in parents:
            assert position[parent] < position[child]


# name -> (shards, finished, expected readable)
READABLE = {
    "nothing finished: only roots": (CASES["diamond: split then merge"][0], set(), ["A"]),
    "root finished: both split children": (CASES["diamond: split then merge"][0], {"A"}, ["B", "C"]),
    "one side of the diamond finished: merge child still waits": (
        CASES["diamond: split then merge"][0],
        {"A", "B"},
        ["C"],
    ),
    "both sides finished: merge child readable": (CASES["diamond: split then merge"][0], {"A", "B", "C"}, ["D"]),
    "merge waits for the adjacent parent too": (CASES["merge"][0], {"A"}, ["B"]),
    "missing parents do not block": (CASES["parent dropped by retention"][0], set(), ["B", "C"]),
    "everything finished": (CASES["split"][0], {"A", "B", "C"}, []),
}


@pytest.mark.parametrize("case", READABLE, ids=list(READABLE))
def test_readable_shards_are_those_whose_parents_all_finished(case: str) -> None:
    shards, finished, expected = READABLE[case]
    assert Lineage.build(shards).readable(finished) == expected


def test_missing_parents_are_reported() -> None:
    lineage = Lineage.build([shard("B", "GONE", "ALSO-GONE"), shard("C", "B")])
    assert dict(lineage.missing_parents) == {"B": ("GONE", "ALSO-GONE")}
    assert lineage.parents["C"] == ("B",)


def test_known_depths_keep_a_shard_at_its_depth_after_its_ancestors_are_trimmed() -> None:
    # B was depth 1 when its parent A was listed; A is gone now, B keeps depth 1 and C stays 2.
    lineage = Lineage.build([shard("B", "A", closed=True), shard("C", "B")], known_depths={"B": 1})
    assert dict(lineage.depths) == {"B": 1, "C": 2}


def test_known_depth_of_a_missing_parent_places_the_child_below_it() -> None:
    lineage = Lineage.build([shard("C", "A", "B")], known_depths={"A": 3, "B": 1})
    assert lineage.depth("C") == 4


def test_waves_group_shards_by_depth_shallowest_first() -> None:
    lineage = Lineage.build(CASES["diamond: split then merge"][0])
    assert lineage.waves(["D", "C", "A", "B"]) == [["A"], ["B", "C"], ["D"]]


def test_ancestors_include_both_parents_of_merges() -> None:
    lineage = Lineage.build(CASES["diamond: split then merge"][0])
    assert lineage.ancestors("D") == {"A", "B", "C"}
    assert lineage.ancestors("A") == set()


def test_roots_and_leaves() -> None:
    lineage = Lineage.build(CASES["merge of shards at different depths takes the deeper one"][0])
    assert lineage.roots() == ["A", "B"]
    assert sorted(lineage.leaves()) == ["D", "E"]


@pytest.mark.parametrize(
    "shards",
    [
        [shard("A", "B"), shard("B", "A")],
        [shard("A", "C"), shard("B", "A"), shard("C", "B")],
    ],
    ids=["two-cycle", "three-cycle"],
)
def test_cycle_is_a_lineage_error(shards: list[Shard]) -> None:
    with pytest.raises(LineageError, match="cycle"):
        Lineage.build(shards)


def test_self_parent_is_a_lineage_error() -> None:
    with pytest.raises(LineageError, match="itself"):
        Lineage.build([shard("A", "A")])


def test_same_shard_listed_twice_with_different_attributes_is_a_lineage_error() -> None:
    with pytest.raises(LineageError, match="twice"):
        Lineage.build([shard("A"), shard("A", closed=True)])


def test_equal_depth_shards_never_overlap_in_hash_range() -> None:
    """Promise 3's premise, checked on a generated history of splits and merges."""
    shards = _history(splits=60, merges=40)
    lineage = Lineage.build(shards)
    by_depth: dict[int, list[Shard]] = {}
    for s in shards:
        by_depth.setdefault(lineage.depth(s.shard_id), []).append(s)
    for depth, group in by_depth.items():
        ranges = sorted((s.starting_hash_key, s.ending_hash_key) for s in group)
        for (_, end), (start, _) in itertools.pairwise(ranges):
            assert end < start, f"overlap at depth {depth}"


def test_a_deep_chain_of_5000_shards_builds_without_recursion() -> None:
    shards = [shard("s0", closed=True)] + [shard(f"s{i}", f"s{i - 1}", closed=True) for i in range(1, 5000)]
    lineage = Lineage.build(shards)
    assert lineage.depth("s4999") == 4999
    assert lineage.readable({f"s{i}" for i in range(4999)}) == ["s4999"]


def test_a_history_of_5000_shards_orders_parents_first_and_opens_every_leaf() -> None:
    # Its speed is measured by the planning benchmark, not here.
    shards = _history(splits=2600, merges=1200)
    assert len(shards) > 5000
    lineage = Lineage.build(shards)
    position = {s: i for i, s in enumerate(lineage.order)}
    assert all(position[p] < position[c] for c, ps in lineage.parents.items() for p in ps)
    open_ids = {s.shard_id for s in shards if not s.closed}
    assert set(lineage.readable(s.shard_id for s in shards if s.closed)) == open_ids


def _history(*, splits: int, merges: int) -> list[Shard]:
    """A reshard history like AWS produces: splits and merges of adjacent open shards."""
    import random

    rng = random.Random(7)
    top = 2**128 - 1
    open_shards = [Shard("shardId-0", starting_hash_key=0, ending_hash_key=top)]
    closed: list[Shard] = []
    counter = 1

    def close(s: Shard) -> None:
        closed.append(
            Shard(
                s.shard_id,
                s.parent_shard_id,
                s.adjacent_parent_shard_id,
                s.starting_hash_key,
                s.ending_hash_key,
                ending_sequence_number="1",
            )
        )

    operations = ["split"] * splits + ["merge"] * merges
    rng.shuffle(operations)
    for op in operations:
        open_shards.sort(key=lambda s: s.starting_hash_key)
        if op == "merge" and len(open_shards) > 1:
            i = rng.randrange(len(open_shards) - 1)
            low, high = open_shards[i], open_shards[i + 1]
            child = Shard(
                f"shardId-{counter}", low.shard_id, high.shard_id, low.starting_hash_key, high.ending_hash_key
            )
            open_shards[i : i + 2] = [child]
            close(low)
            close(high)
            counter += 1
            continue
        candidates = [s for s in open_shards if s.ending_hash_key - s.starting_hash_key > 1]
        target = rng.choice(candidates)
        middle = (target.starting_hash_key + target.ending_hash_key + 1) // 2
        left = Shard(f"shardId-{counter}", target.shard_id, None, target.starting_hash_key, middle - 1)
        right = Shard(f"shardId-{counter + 1}", target.shard_id, None, middle, target.ending_hash_key)
        counter += 2
        open_shards.remove(target)
        open_shards += [left, right]
        close(target)
    return closed + open_shards
