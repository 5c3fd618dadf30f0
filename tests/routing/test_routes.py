"""Routing's rules as tables of cases: which values name a table, the output template, the
route of each decoded row (or why it has none), and which new tables a batch makes."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.routing.routes import (
    MISSING,
    NOT_LISTED,
    UNUSABLE,
    RouteRule,
    check_template,
    collisions,
    is_route,
    new_tables,
    route_values,
    table_of,
)


@pytest.mark.parametrize(
    ("value", "names_a_table"),
    [
        ("orders", True),
        ("order_items", True),
        ("click-v2", True),
        ("A1", True),
        ("-x", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("", False),
        ("_hidden", False),  # readers skip _ folders; our bookkeeping is _kinesis_batch
        ("a/b", False),
        ("../up", False),
        ("a.b", False),  # another Iceberg namespace
        ("a b", False),
        ("é", False),
        ("a\n", False),
    ],
)
def test_a_route_value_names_a_table_only_with_letters_digits_underscore_and_dash(
    value: str, names_a_table: bool
) -> None:
    assert is_route(value) is names_a_table


@pytest.mark.parametrize(
    ("output", "route_by", "says"),
    [
        ("s3://lake/app/{route}", "type", None),
        ("analytics.{route}", "metadata.table-name", None),
        ("s3://lake/app/{route}", None, "say which field names the table (--route-by)"),
        ("s3://lake/app", "type", "--output must name each table with {route} once"),
        ("s3://lake/{route}/{route}", "type", "--output must name each table with {route} once"),
        ("s3://lake/app", None, None),
    ],
)
def test_the_output_holds_route_exactly_when_route_by_is_given(
    output: str, route_by: str | None, says: str | None
) -> None:
    if says is None:
        check_template(output, route_by)
    else:
        with pytest.raises(IllegalArgumentError, match=re.escape(says)):
            check_template(output, route_by)


def test_a_route_goes_into_the_template_and_an_unusable_one_never_does() -> None:
    assert table_of("s3://lake/app/{route}", "orders") == "s3://lake/app/orders"
    assert table_of("analytics.{route}", "click-v2") == "analytics.click-v2"
    with pytest.raises(IllegalArgumentError):
        table_of("s3://lake/app/{route}", "../other")


@pytest.mark.parametrize(
    ("route_by", "routes", "max_new", "says"),
    [
        ("", "", 20, "--route-by ''"),
        ("metadata..table", "", 20, "a field or a dotted path"),
        ("type", "a,_b", 20, "--routes: '_b' cannot name a table"),
        ("type", "a", -1, "--max-new-tables: -1 is not 0 or more"),
    ],
)
def test_bad_routing_options_are_one_line_each(route_by: str, routes: str, max_new: int, says: str) -> None:
    with pytest.raises(IllegalArgumentError, match=re.escape(says)):
        RouteRule.of(route_by, routes, max_new)


ROWS = pa.array(
    [
        {"type": "click", "metadata": {"table-name": "orders"}},
        {"type": "purchase", "metadata": {"table-name": "order items"}},
        {"type": None, "metadata": None},
        {"type": "_secret", "metadata": {"table-name": None}},
        {"type": "x" * 200, "metadata": {"table-name": "items"}},
    ]
)


@pytest.mark.parametrize(
    ("route_by", "routes", "values", "kinds"),
    [
        ("type", "", ["click", "purchase", None, None, None], [None, None, MISSING, UNUSABLE, UNUSABLE]),
        ("type", "click", ["click", None, None, None, None], [None, NOT_LISTED, MISSING, UNUSABLE, UNUSABLE]),
        (
            "metadata.table-name",
            "",
            ["orders", None, None, None, "items"],
            [None, UNUSABLE, MISSING, MISSING, None],
        ),
        ("metadata.nothing", "", [None] * 5, [MISSING] * 5),
        ("type.deeper", "", [None] * 5, [MISSING] * 5),
    ],
)
def test_each_row_gets_its_route_or_the_reason_it_has_none(
    route_by: str, routes: str, values: list[str | None], kinds: list[str | None]
) -> None:
    routed = route_values(ROWS, RouteRule.of(route_by, routes))
    assert routed.values == values
    assert [reason[0] if reason else None for reason in routed.reasons] == kinds
    for reason in routed.reasons:
        if reason is not None:
            assert route_by in reason[1] and len(reason[1]) < 200, reason


def test_a_route_that_is_not_text_is_a_dead_letter_that_says_so() -> None:
    rows = pa.array([{"type": 3}, {"type": None}])
    routed = route_values(rows, RouteRule.of("type"))
    assert routed.values == [None, None]
    assert [reason[1] if reason else None for reason in routed.reasons] == ["type is not text", "type is missing"]


def test_dictionary_encoded_values_route_like_plain_ones() -> None:
    kinds = pa.array(["a", "b", "a"]).dictionary_encode()
    rows = pa.StructArray.from_arrays([kinds], names=["type"])
    assert route_values(rows, RouteRule.of("type")).values == ["a", "b", "a"]


@pytest.mark.parametrize(
    ("seen", "known", "max_new", "made"),
    [
        ({"a", "b"}, set(), 20, {"a", "b"}),
        ({"a", "b", "c"}, {"a"}, 1, {"b"}),  # made before: never counted
        ({"c", "b", "a"}, set(), 2, {"a", "b"}),  # by name, whatever order they came in
        ({"a"}, set(), 0, set()),
        (set(), {"a"}, 20, set()),
    ],
)
def test_a_batch_makes_at_most_max_new_tables_chosen_the_same_way_every_time(
    seen: set[str], known: set[str], max_new: int, made: set[str]
) -> None:
    assert new_tables(seen, known, max_new) == made


@pytest.mark.parametrize(
    ("seen", "known", "colliding", "made"),
    [
        ({"Orders", "orders"}, set(), {"orders": "Orders"}, {"Orders"}),  # the first new spelling by name
        ({"ORDERS", "refunds"}, {"orders"}, {"ORDERS": "orders"}, {"refunds"}),  # a known table keeps its name
        ({"orders"}, {"Orders", "orders"}, {}, set()),  # two known already (made before this rule): both stay
        ({"a", "b"}, set(), {}, {"a", "b"}),
    ],
)
def test_route_values_that_differ_only_in_case_never_make_two_tables(
    seen: set[str], known: set[str], colliding: dict[str, str], made: set[str]
) -> None:
    assert collisions(seen, known) == colliding
    assert new_tables(seen, known, 20) == made
    assert collisions(sorted(seen, reverse=True), known) == colliding, "the order seen changes nothing"


@given(
    st.sets(st.sampled_from(["a", "A", "b", "B", "ab", "aB", "Ab"]), max_size=7), st.sets(st.sampled_from(["a", "B"]))
)
def test_no_two_tables_of_one_name_folded(seen: set[str], known: set[str]) -> None:
    tables = set(known) | new_tables(seen, known, 100)
    new = tables - set(known)
    assert len({route.casefold() for route in new}) == len(new)
    assert not {route.casefold() for route in new} & {route.casefold() for route in known}
    assert set(seen) <= tables | set(collisions(seen, known)) | set(known)
