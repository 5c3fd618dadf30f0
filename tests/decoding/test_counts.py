"""What a range's records became (kinesis_batch.decoding.counts): by route, a single table's one
route naming no table (its JSON as a run without routes always said it), each change a
collapsing dropped counted once."""

from __future__ import annotations

from kinesis_batch.decoding.counts import Counts
from kinesis_batch.landing import Landing
from kinesis_batch.routing.routes import SINGLE


def test_a_single_tables_counts_are_the_totals_with_its_key_and_what_it_dropped_among_the_changes() -> None:
    counts = Counts(records=4, rows=3, dead_letters=1)
    counts.changes["skipped"] += 1
    counts.landed(SINGLE, 3, 3)
    counts.folded(SINGLE, ("id",), {"superseded": 2})
    assert counts.key == ("id",)
    assert counts.to_json() == {
        "records": 4,
        "rows": 3,
        "dead_letters": 1,
        "filtered": 0,
        "reasons": {},
        "changes": {"skipped": 1, "superseded": 2},
        "key": ["id"],
    }


def test_routed_counts_are_by_table_and_each_drop_is_counted_once() -> None:
    counts = Counts(records=5, rows=5)
    counts.landed("orders", 2, 2)
    counts.landed("customers", 3, 2)
    counts.folded("orders", ("order_id",), {"superseded": 1})
    counts.folded("customers", ("id",), {"superseded": 1, "duplicates": 1})
    body = counts.to_json()
    assert body["tables"] == {"customers": 3, "orders": 2} and body["table_records"] == {"customers": 2, "orders": 2}
    assert body["keys"] == {"customers": ["id"], "orders": ["order_id"]} and "key" not in body and "changes" not in body
    assert Landing.of(body).all_changes == {"duplicates": 1, "superseded": 2}
