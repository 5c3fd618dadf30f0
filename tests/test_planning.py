"""Planning is pure: lineage + leases in, RunPlan out. Tables of cases."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from kinesis_batch import Checkpoint, Lease, Lineage, Shard
from kinesis_batch.planning import ShardRange, generations, parents_ended, plan_run, readable
from kinesis_batch.shards.reader import ReadResult

NOW = 1_000_000
ME, OTHER = "me", "other"
END = Checkpoint.shard_end()


def shard(shard_id: str, parent: str | None = None, adjacent: str | None = None, *, closed: bool = False) -> Shard:
    return Shard(shard_id, parent, adjacent, ending_sequence_number="9" if closed else None)


DIAMOND = [shard("A", closed=True), shard("B", "A", closed=True), shard("C", "A", closed=True), shard("D", "B", "C")]


def lease(key: str, checkpoint: Checkpoint | None = None, **kw: object) -> Lease:
    return Lease(key, checkpoint=checkpoint or Checkpoint.trim_horizon(), **kw)  # type: ignore[arg-type]


def plan(shards: list[Shard], leases: list[Lease], **kw: object):  # type: ignore[no-untyped-def]
    options = {"worker_id": ME, "now_ms": NOW, "initial": Checkpoint.trim_horizon(), **kw}
    return plan_run("s", Lineage.build(shards), {x.lease_key: x for x in leases}, **options)  # type: ignore[arg-type]


# name -> (leases, expected waves as lists of shard ids, expected waiting)
WAVES = {
    "first run: parents first, then split children, then the merge child": (
        [],
        [["A"], ["B", "C"], ["D"]],
        {},
    ),
    "root finished: children start in wave 0": (
        [lease("A", END), lease("B"), lease("C"), lease("D")],
        [["B", "C"], ["D"]],
        {},
    ),
    "one side of the diamond finished: merge child after the other": (
        [lease("A", END), lease("B", END), lease("C"), lease("D")],
        [["C"], ["D"]],
        {},
    ),
    "all parents finished: only the open child": (
        [lease("A", END), lease("B", END), lease("C", END), lease("D", Checkpoint.at("5"))],
        [["D"]],
        {},
    ),
    "a parent held live elsewhere blocks the merge child": (
        [lease("A", END), lease("B"), lease("C", lease_owner=OTHER, expires_at_ms=NOW + 1), lease("D")],
        [["B"]],
        {"D": ("C",)},
    ),
    "an expired holder does not block": (
        [lease("A", END), lease("B"), lease("C", lease_owner=OTHER, expires_at_ms=NOW - 1), lease("D")],
        [["B", "C"], ["D"]],
        {},
    ),
    "our own live lease is planned": (
        [lease("A", END), lease("B", lease_owner=ME, expires_at_ms=NOW + 5), lease("C", END), lease("D")],
        [["B"], ["D"]],
        {},
    ),
    "a pending batch blocks the shard and its children until recovered": (
        [lease("A", END), lease("B", pending_batch_id="batch-1"), lease("C", END), lease("D")],
        [],
        {"D": ("B",)},
    ),
}


@pytest.mark.parametrize("case", WAVES, ids=list(WAVES))
def test_waves_put_every_parent_before_its_children(case: str) -> None:
    leases, expected_waves, expected_waiting = WAVES[case]
    result = plan(DIAMOND, leases)
    assert [[r.shard_id for r in wave] for wave in result.waves()] == expected_waves
    assert dict(result.waiting) == expected_waiting


def test_live_lease_elsewhere_is_reported_not_planned() -> None:
    result = plan([shard("A")], [lease("A", lease_owner=OTHER, expires_at_ms=NOW + 1)])
    assert result.ranges == ()
    assert dict(result.leased_elsewhere) == {"A": OTHER}


def test_kcl_lease_without_expiry_counts_as_held() -> None:
    result = plan([shard("A")], [lease("A", lease_owner="kcl-worker")])
    assert dict(result.leased_elsewhere) == {"A": "kcl-worker"}


def test_pending_batches_are_listed_for_recovery() -> None:
    result = plan([shard("A")], [lease("A", pending_batch_id="b-7")])
    assert dict(result.pending) == {"A": "b-7"}
    assert result.ranges == ()


def test_a_lease_marked_with_the_runs_own_batch_is_planned_not_recovered() -> None:
    mine = plan([shard("A"), shard("B")], [lease("A", pending_batch_id="b-8"), lease("B", pending_batch_id="b-7")],
                batch_id="b-8")  # fmt: skip
    assert [r.shard_id for r in mine.ranges] == ["A"] and dict(mine.pending) == {"B": "b-7"}


def test_ranges_start_at_the_checkpoint_and_carry_depth_and_closedness() -> None:
    result = plan(DIAMOND, [lease("A", END), lease("B", Checkpoint.at("42", 3)), lease("C", END), lease("D")])
    b = result.range("B")
    assert (b.start, b.depth, b.wave, b.closed) == (Checkpoint.at("42", 3), 1, 0, True)
    d = result.range("D")
    assert (d.depth, d.wave, d.closed, d.planned_parents) == (2, 1, False, ("B",))
    assert result.finished == ("A", "C")


@pytest.mark.parametrize(
    "initial",
    [Checkpoint.latest(), Checkpoint.at_timestamp(datetime(2026, 1, 1, tzinfo=UTC))],
    ids=["latest", "at_timestamp"],
)
def test_initial_position_applies_on_the_first_run_only(initial: Checkpoint) -> None:
    first = plan(DIAMOND, [], initial=initial)
    assert {r.start for r in first.ranges} == {initial}
    assert {x.checkpoint for x in first.new_leases} == {initial}
    # A later run meets a shard born of a reshard: it is read from its start.
    later_shards = [*DIAMOND, shard("E", "D")]
    later_leases = [replace(x, checkpoint=END) if x.lease_key != "D" else x for x in first.new_leases]
    later = plan(later_shards, later_leases, initial=initial)
    assert [x.lease_key for x in later.new_leases] == ["E"]
    assert later.new_leases[0].checkpoint == Checkpoint.trim_horizon()


def test_new_leases_record_parents_and_depth() -> None:
    result = plan(DIAMOND, [])
    by_key = {x.lease_key: x for x in result.new_leases}
    assert by_key["D"].parent_shard_ids == frozenset({"B", "C"})
    assert by_key["D"].lineage_depth == 2
    assert by_key["A"].parent_shard_ids == frozenset()


def test_shard_filter_limits_the_plan_and_unplanned_parents_block() -> None:
    result = plan(DIAMOND, [lease("A", END), lease("B"), lease("C"), lease("D")], shard_filter=frozenset({"B", "D"}))
    assert result.shard_ids == ["B"]
    assert dict(result.waiting) == {"D": ("C",)}


def test_a_5000_shard_history_plans_every_open_shard() -> None:
    from tests.shards.test_lineage import _history

    shards = _history(splits=2600, merges=1200)
    leases = [lease(s.shard_id, END) for s in shards if s.closed]
    result = plan(shards, leases)
    assert sorted(result.shard_ids) == sorted(s.shard_id for s in shards if not s.closed)
    assert {r.wave for r in result.ranges} == {0}


def _ranges(*specs: tuple[str, tuple[str, ...]]) -> list[ShardRange]:
    return [ShardRange(s, Checkpoint.trim_horizon(), 0, 0, False, parents) for s, parents in specs]


# name -> (held, expected readable)
READABLE = {
    "all held: all readable": ({"A", "B", "C", "D"}, ["A", "B", "C", "D"]),
    "a parent not held: its child and the merge below it are not": ({"A", "C", "D"}, ["A", "C"]),
    "the root not held: nothing below it": ({"B", "C", "D"}, []),
}


@pytest.mark.parametrize("case", READABLE)
def test_readable_ranges_need_every_planned_parent_readable(case: str) -> None:
    held, expected = READABLE[case]
    diamond = _ranges(("A", ()), ("B", ("A",)), ("C", ("A",)), ("D", ("B", "C")))
    assert [x.shard_id for x in readable(diamond, held)] == expected


def _result(shard_id: str, *, ended: bool) -> ReadResult:
    return ReadResult(shard_id, "1", 0, 1, 1, ended, 0, 1, 0, 0)


# name -> (results, whether D's parents ended)
PARENTS_ENDED = {
    "both parents at SHARD_END": ({"B": _result("B", ended=True), "C": _result("C", ended=True)}, True),
    "one parent stopped at the bound": ({"B": _result("B", ended=True), "C": _result("C", ended=False)}, False),
    "one parent not read": ({"B": _result("B", ended=True)}, False),
}


@pytest.mark.parametrize("case", PARENTS_ENDED)
def test_a_child_must_be_read_only_once_every_parent_ended(case: str) -> None:
    results, expected = PARENTS_ENDED[case]
    (child,) = _ranges(("D", ("B", "C")))
    assert parents_ended(child, results) is expected
    assert parents_ended(_ranges(("A", ()))[0], results) is True  # no planned parent


# name -> (shards in commit order, parents, expected generations)
GENERATIONS = {
    "a diamond: root, its split children side by side, the merge": (
        ["A", "B", "C", "D"],
        {"B": {"A"}, "C": {"A"}, "D": {"B", "C"}},
        [["A"], ["B", "C"], ["D"]],
    ),
    "parents outside the batch do not hold a shard back": (
        ["B", "C", "D"],
        {"B": {"A"}, "D": {"B", "C"}},
        [["B", "C"], ["D"]],
    ),
    "unrelated shards all move together": (["E", "F", "G"], {}, [["E", "F", "G"]]),
    "a chain moves one at a time": (["A", "B", "C"], {"B": {"A"}, "C": {"B"}}, [["A"], ["B"], ["C"]]),
    "nothing to move": ([], {}, []),
}


@pytest.mark.parametrize("case", GENERATIONS)
def test_checkpoints_move_a_generation_at_a_time_parents_first(case: str) -> None:
    shards, parents, expected = GENERATIONS[case]
    assert generations(shards, parents) == expected
