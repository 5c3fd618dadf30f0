"""A routed batch's counts once the routes past --max-new-tables are refused: their rows leave
the counts, their records become dead letters with the reason (table of cases: no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.landing import Landing
from kinesis_batch.run.route import FOREIGN, REFUSED, refused_counts

COUNTS = {
    "records": 10,
    "rows": 12,
    "dead_letters": 1,
    "filtered": 0,
    "reasons": {"route: no route": 1},
    "tables": {"a": 4, "b": 6, "c": 2},  # b's 3 records made 6 rows (a transform exploded them)
    "table_records": {"a": 4, "b": 3, "c": 2},
}


@pytest.mark.parametrize(
    ("refused", "rows", "dead", "reasons", "tables"),
    [
        (set(), 12, 1, {"route: no route": 1}, {"a": 4, "b": 6, "c": 2}),
        ({"b"}, 6, 4, {REFUSED: 3, "route: no route": 1}, {"a": 4, "c": 2}),
        ({"b", "c"}, 4, 6, {REFUSED: 5, "route: no route": 1}, {"a": 4}),
        ({"z"}, 12, 1, {"route: no route": 1}, {"a": 4, "b": 6, "c": 2}),  # not this range's
        ({"b!"}, 6, 4, {FOREIGN: 3, "route: no route": 1}, {"a": 4, "c": 2}),
        ({"b!", "c"}, 4, 6, {FOREIGN: 3, REFUSED: 2, "route: no route": 1}, {"a": 4}),
    ],
)
def test_refused_routes_records_become_dead_letters_and_leave_the_rows(
    refused: set[str], rows: int, dead: int, reasons: dict[str, int], tables: dict[str, int]
) -> None:
    """``refused``: past --max-new-tables; ending in ``!``: naming a table that is not ours."""
    why = {route.rstrip("!"): FOREIGN if route.endswith("!") else REFUSED for route in refused}
    counts: dict[str, Any] = refused_counts(COUNTS, why)
    assert (counts["rows"], counts["dead_letters"], counts["reasons"], counts["tables"]) == (
        rows,
        dead,
        reasons,
        tables,
    )
    assert counts["records"] == 10 and set(counts["table_records"]) == set(tables)
    assert counts["records"] == sum(counts["table_records"].values()) + counts["dead_letters"] + counts["filtered"]


def test_a_refused_route_of_changes_takes_its_key_and_what_its_collapsing_dropped_with_it() -> None:
    changes = {
        **COUNTS,
        "changes": {"skipped": 2},  # before routing: the envelope's
        "keys": {"a": ["id"], "b": ["id"], "c": ["n"]},
        "table_changes": {"a": {"superseded": 2}, "b": {"superseded": 3, "duplicates": 1}, "c": {}},
    }
    counts = refused_counts(changes, {"b": REFUSED})
    assert counts["changes"] == {"skipped": 2}
    assert Landing.of(counts).all_changes == {"skipped": 2, "superseded": 2}
    assert set(counts["keys"]) == set(counts["table_changes"]) == {"a", "c"}
