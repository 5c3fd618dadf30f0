"""The routing stage: each record's rows go to the table its route names, fitted to that table's
own fields; a record with no usable route, or whose rows name two routes, is one dead letter
with the reason; the counts add up, per table too."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.decoding.pipeline import Page, Pipeline
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.errors import BadRecordError
from kinesis_batch.routing.routes import RouteRule
from kinesis_batch.shards.model import Record


def records(*payloads: bytes) -> list[Record]:
    at = datetime(2026, 11, 25, tzinfo=UTC)
    return [Record("shardId-3", str(7000 + i), 0, f"k{i}", p, at) for i, p in enumerate(payloads)]


def routed(route_by: str = "type", routes: str = "", **settings: object) -> Pipeline:
    spec = DecodeSpec(
        DecodeSettings(decode="json", **settings),  # type: ignore[arg-type]
        routing=RouteRule.of(route_by, routes),
        tables={"click": pa.schema([pa.field("x", pa.int64())])},
    )
    return Pipeline(spec, shard_id="shardId-3", depth=1, batch_id="b1")


def only(page: Page, route: str) -> pa.RecordBatch:
    """The route's rows of a page, as one batch."""
    return page.routes[route]


def test_rows_go_to_their_routes_table_each_fitted_to_its_own_fields() -> None:
    run = routed()
    done = run.page(
        records(
            b'{"type": "click", "x": 1}',
            b'{"type": "purchase", "x": "EUR 3"}',  # x is text in its own table: no conflict with click's
            b'{"type": "click", "x": 2, "page": "/a"}',
            b'{"x": 4}',
            b'{"type": "a/b", "x": 5}',
            b'{"type": "click", "x": "six"}',  # conflicts with click's x
        )
    )
    assert done.rows is None and sorted(done.routes) == ["click", "purchase"]
    click, purchase = (only(done, "click"), only(done, "purchase"))
    assert click.column("x").to_pylist() == [1, 2] and click.column("page").to_pylist() == [None, "/a"]
    assert click.schema.field("x").type == pa.int64() and purchase.schema.field("x").type == pa.string()
    assert click.column("sequence_number").to_pylist() == ["7000", "7002"]
    assert set(click.column("batch_id").to_pylist()) == {"b1"} and purchase.column("type").to_pylist() == ["purchase"]
    assert done.dead is not None
    dead = {row["sequence_number"]: (row["stage"], row["reason"]) for row in done.dead.to_pylist()}
    assert dead["7003"] == ("route", "no route: type is missing")
    assert dead["7004"][0] == "route" and dead["7004"][1].startswith("unusable route: type is 'a/b'")
    # Decoded with its own table's records only: the reason a run without routes gives.
    assert dead["7005"] == (
        "schema",
        "type changed: x is string, but the column is int64 (as the table or this read's earlier records made it)",
    )
    counts = run.counts
    assert (counts.records, counts.rows, counts.dead_letters, counts.filtered) == (6, 3, 3, 0)
    assert counts.tables == {"click": 2, "purchase": 1}
    assert counts.to_json()["tables"] == {"click": 2, "purchase": 1}
    assert [f.name for f in run.route_fields["click"]] == ["x", "type", "page"]


def test_a_route_not_in_routes_is_a_dead_letter_and_a_table_keeps_its_fields_across_pages() -> None:
    run = routed(routes="click,view")
    run.page(records(b'{"type": "view", "n": 1}'))
    done = run.page(records(b'{"type": "view", "n": 2, "m": "x"}', b'{"type": "buy", "n": 1}'))
    assert only(done, "view").column("n").to_pylist() == [2] and run.route_fields["view"].names == ["type", "n", "m"]
    assert done.dead is not None and done.dead.column("reason").to_pylist() == [
        "route not listed: type is 'buy', not one of --routes"
    ]
    assert run.counts.tables == {"view": 2}


def test_a_record_whose_rows_name_two_routes_is_one_dead_letter() -> None:
    run = routed(transform="tests.decoding.transforms:explode_items")
    done = run.page(records(b'{"items": [{"type": "a"}, {"type": "b"}]}', b'{"items": [{"type": "a"}, {"type": "a"}]}'))
    assert done.dead is not None
    ((stage, reason),) = [(row["stage"], row["reason"]) for row in done.dead.to_pylist()]
    assert stage == "route" and reason.startswith("routes disagree: its rows name 2 routes (a, b)")
    assert only(done, "a").column("record_index").to_pylist() == [0, 1]
    assert only(done, "a").column("sequence_number").to_pylist() == ["7001", "7001"]


def test_on_bad_record_fail_stops_at_a_record_with_no_route() -> None:
    run = routed(on_bad_record="fail")
    with pytest.raises(BadRecordError, match="sequence number 7001: route failed: no route: type is missing"):
        run.page(records(b'{"type": "a"}', b'{"kind": "b"}'))


def test_a_routed_spec_crosses_to_the_tasks_whole_with_each_routes_key() -> None:
    spec = DecodeSpec(
        DecodeSettings(decode="json"),
        routing=RouteRule.of("metadata.table-name", "a,b", 3),
        tables={"a": pa.schema([pa.field("id", pa.int32())])},
    )
    assert DecodeSpec.from_json(spec.to_json()) == spec
    keyed = DecodeSpec(
        DecodeSettings(decode="json"),
        routing=RouteRule.of("type"),
        changes=ChangeSettings(mode="dms", key=("id",), route_keys={"b": ("region", "id")}),
    )
    assert DecodeSpec.from_json(keyed.to_json()) == keyed


def test_a_record_rejected_before_routing_keeps_that_stages_reason() -> None:
    done = routed().page(records(b'{"shard_id": "mine"}', b'{"type": "a", "shard_id": "mine"}'))
    assert done.dead is not None
    assert [(row["stage"], row["reason"].split(":")[0]) for row in done.dead.to_pylist()] == [
        ("schema", "reserved name"),
        ("schema", "reserved name"),
    ]
