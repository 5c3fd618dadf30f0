"""What a routed stream needs beside --route-by (kinesis_batch.routing.settings): each mistake is
one line before anything runs."""

from __future__ import annotations

import pytest

from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.routing.routes import RouteRule
from kinesis_batch.routing.settings import check_routing

RULE = RouteRule.of("type", "click,view")


def test_a_routed_stream_with_what_it_needs_is_accepted() -> None:
    check_routing("s3://lake/app/{route}", RULE, "json", None, "s3://lake/app/_dead_letter")
    check_routing("s3://lake/app/{route}", RULE, "raw", ChangeSettings.parse("dms", "click:id"), "")
    check_routing("s3://lake/app", None, "raw", None, "")


@pytest.mark.parametrize(
    ("output", "rule", "decode", "changes", "dead", "said"),
    [
        ("s3://lake/app", RULE, "json", None, "", "--output must name each table with {route} once"),
        ("s3://lake/{route}", None, "json", None, "", "say which field names the table (--route-by)"),
        ("s3://lake/{route}", RULE, "raw", None, "", "--route-by type reads decoded records"),
        ("s3://lake/{route}", RULE, "json", None, "s3://dl/{route}", "one for the whole stream, without {route}"),
        ("s3://lake/app", None, "json", ChangeSettings.parse("upsert", "click:id"), "", "it goes with --route-by"),
        ("s3://lake/{route}", RULE, "json", ChangeSettings.parse("upsert", "buy:id"), "", "is not one of --routes"),
        ("s3://lake/{route}", RULE, "json", ChangeSettings.parse("upsert", "_x:id"), "", "cannot name a table"),
    ],
)
def test_each_mistake_is_one_line(
    output: str, rule: RouteRule | None, decode: str, changes: ChangeSettings | None, dead: str, said: str
) -> None:
    with pytest.raises(IllegalArgumentError) as raised:
        check_routing(output, rule, decode, changes, dead)
    assert said in str(raised.value) and "\n" not in str(raised.value)
