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
    ],
)
def test_a_landing_is_said_in_one_line_with_each_tables_rows(landing: Landing, said: str) -> None:
    assert landing.said() == said
