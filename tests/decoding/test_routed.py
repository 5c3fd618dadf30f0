"""A routed stream of changes (``--route-by`` with ``--changes``): each route's rows go through
that route's changes stage with its own key, collapsed per key; a source's envelope names the
route; a route with no key is dead letters, never rows of a table without one."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.columns import CHANGE_OP
from kinesis_batch.decoding.pipeline import Page, Pipeline
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.landing import Landing
from kinesis_batch.routing.routes import RouteRule
from kinesis_batch.shards.model import Record


def dms(table: str, operation: str, data: dict[str, Any], second: int) -> bytes:
    metadata = {
        "timestamp": f"2026-11-25T10:00:{second:02d}.000000Z",
        "record-type": "data",
        "operation": operation,
        "transaction-id": second,
        "schema-name": "shop",
        "table-name": table,
    }
    return json.dumps({"data": data, "metadata": metadata}).encode()


def records(*payloads: bytes) -> list[Record]:
    at = datetime(2026, 11, 25, tzinfo=UTC)
    return [Record("shardId-1", str(100 + i), 0, f"k{i}", p, at) for i, p in enumerate(payloads)]


def pipeline(key: str, route_by: str = "metadata.table-name", mode: str = "dms") -> Pipeline:
    spec = DecodeSpec(
        DecodeSettings(decode="json"),
        changes=ChangeSettings.parse(mode, key),
        routing=RouteRule.of(route_by),
        tables={"orders": pa.schema([pa.field("order_id", pa.int64())])},
    )
    return Pipeline(spec, shard_id="shardId-1", depth=0, batch_id="b1")


def rows(page: Page, route: str) -> list[dict[str, Any]]:
    return page.routes[route].to_pylist()


def test_dms_tables_are_routed_by_the_envelope_and_collapsed_by_their_own_keys() -> None:
    run = pipeline("orders:order_id;customers:region,id")
    done = run.page(
        records(
            dms("orders", "insert", {"order_id": 1, "total": "9.50"}, 1),
            dms("customers", "insert", {"id": 7, "region": "eu", "name": "Ada"}, 2),
            dms("orders", "update", {"order_id": 1, "total": "12.00"}, 3),
            dms("customers", "insert", {"id": 7, "region": "us", "name": "Bob"}, 4),  # another key: region differs
            dms("customers", "delete", {"id": 7, "region": "eu"}, 5),
        )
    )
    orders, customers = rows(done, "orders"), rows(done, "customers")
    assert [(r["order_id"], r["total"], r[CHANGE_OP.name]) for r in orders] == [(1, "12.00", "upsert")]
    assert sorted((r["region"], r[CHANGE_OP.name]) for r in customers) == [("eu", "delete"), ("us", "upsert")]
    assert "metadata" not in customers[0]  # the row image only: the envelope is not a column
    counts = run.counts
    assert counts.tables == {"customers": 3, "orders": 2} and counts.rows == 5
    assert counts.keys == {"customers": ("region", "id"), "orders": ("order_id",)}
    assert sum(kinds["superseded"] for kinds in counts.table_changes.values()) == 2 and done.dead is None
    # Each drop counted once: by its table, not again among the changes before routing.
    assert not +counts.changes and Landing.of(counts.to_json()).all_changes == {"superseded": 2}


def test_a_route_no_key_names_is_dead_letters_and_a_bare_key_serves_the_others() -> None:
    only_orders = pipeline("orders:order_id")
    done = only_orders.page(records(dms("orders", "insert", {"order_id": 1}, 1), dms("refunds", "insert", {"n": 1}, 2)))
    assert list(done.routes) == ["orders"] and done.dead is not None
    assert done.dead.column("reason").to_pylist() == [
        "no key: --key names no key for table refunds (give --key refunds:COL or a bare --key)"
    ]
    assert done.dead.column("stage").to_pylist() == ["changes"]
    bare = pipeline("orders:order_id;id").page(records(dms("refunds", "insert", {"id": 3}, 2)))
    assert [r["id"] for r in rows(bare, "refunds")] == [3]


def test_an_envelope_without_the_route_is_a_dead_letter_and_upsert_routes_by_the_decoded_row() -> None:
    done = pipeline("id").page(
        records(
            json.dumps(
                {
                    "data": {"id": 1},
                    "metadata": {"timestamp": "2026-11-25T10:00:00Z", "record-type": "data", "operation": "insert"},
                }
            ).encode()
        )
    )
    assert done.dead is not None and done.dead.column("reason").to_pylist() == [
        "no route: metadata.table-name is missing"
    ]
    upsert = pipeline("id", route_by="type", mode="upsert")
    page = upsert.page(records(b'{"type": "click", "id": 1, "n": 1}', b'{"type": "click", "id": 1, "n": 2}'))
    assert [(r["id"], r["n"]) for r in rows(page, "click")] == [(1, 2)]
    assert upsert.counts.keys == {"click": ("id",)}


def test_records_decoded_again_in_a_later_wave_keep_their_own_envelopes() -> None:
    # id is a number in refunds and text in customers: the customers records clash with the
    # page's first type and are decoded again, in a wave of their own.
    run = pipeline("id")
    done = run.page(
        records(
            dms("refunds", "insert", {"id": 1, "amount": 5}, 1),
            dms("customers", "update", {"id": "c-1", "name": "Ada"}, 3),
            dms("refunds", "delete", {"id": 1}, 2),
            dms("customers", "insert", {"id": "c-1", "name": "A"}, 1),
        )
    )
    assert done.dead is None
    assert [(r["id"], r["name"], r[CHANGE_OP.name]) for r in rows(done, "customers")] == [("c-1", "Ada", "upsert")]
    assert [(r["id"], r[CHANGE_OP.name]) for r in rows(done, "refunds")] == [(1, "delete")]


def test_a_refused_change_types_no_column_of_its_route_nor_of_the_pages_after_it() -> None:
    changes = ChangeSettings.parse("upsert", key="pk", sequence_by="ts")
    spec = DecodeSpec(DecodeSettings(decode="json"), changes=changes, routing=RouteRule.of("type"))
    run = Pipeline(spec, shard_id="shardId-1", depth=0, batch_id="b1")
    first = run.page(records(b'{"type": "click", "pk": "x", "ts": null}', b'{"type": "click", "pk": -10, "ts": 0}'))
    assert first.dead is not None and first.dead.column("sequence_number").to_pylist() == ["100"]
    assert [r["pk"] for r in rows(first, "click")] == [-10]
    assert run.route_fields["click"].field("pk").type == pa.int64()
    second = run.page(records(b'{"type": "click", "pk": -11, "ts": 1}'))
    assert second.dead is None and [r["pk"] for r in rows(second, "click")] == [-11]
    assert (run.counts.records, run.counts.dead_letters) == (3, 1)
