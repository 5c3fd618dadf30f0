"""What a shard's records became: from a range's counts, summed over shards, and said in one
line; a routed stream's rows per table travel and add up too (table of cases: no I/O)."""

from __future__ import annotations

import pytest

from kinesis_batch.landing import Landing, total


def test_a_routed_ranges_rows_per_table_travel_with_its_landing_and_add_up_over_shards() -> None:
    one = Landing.of({"rows": 5, "dead_letters": 1, "tables": {"view": 2, "click": 3}, "reasons": {"route: x": 1}})
    two = Landing.of({"rows": 4, "tables": {"buy": 4}})
    assert list(one.tables) == ["click", "view"], "by route"
    assert Landing.from_json(one.to_json()) == one
    both = total([one, two, None])
    assert both is not None and both.tables == {"buy": 4, "click": 3, "view": 2} and both.rows == 9


@pytest.mark.parametrize(
    ("landing", "said"),
    [
        (Landing(rows=12, dead_letters=3), "12 rows, 3 dead letters"),
        (Landing(rows=7, dead_letters=0, tables={"a": 5, "b": 2}), "7 rows in 2 tables: a 5, b 2; 0 dead letters"),
        (
            Landing(rows=9, dead_letters=1, changes={"inserted": 5, "updated": 2, "superseded": 3}, key=("id",)),
            "10 changes (5 inserted, 3 superseded, 2 updated), 1 dead letters",
        ),
        (  # routed: the tasks counted what they skipped; each table, what its merge did
            Landing(
                rows=6,
                changes={"skipped": 2},
                tables={"a": 4, "b": 2},
                keys={"a": ("id",), "b": ("id",)},
                table_changes={"a": {"inserted": 4}, "b": {"inserted": 1, "deleted": 1}},
            ),
            "6 changes (1 deleted, 5 inserted, 2 skipped) in 2 tables: a 4, b 2; 0 dead letters",
        ),
        (Landing(rows=0, dead_letters=4, key=("id",)), "0 changes (none), 4 dead letters"),
    ],
)
def test_a_landing_is_said_in_one_line_with_each_tables_rows(landing: Landing, said: str) -> None:
    assert landing.said() == said
