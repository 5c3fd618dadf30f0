"""DynamoDB's change records, shaped as its documentation for Kinesis Data Streams shows them."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from kinesis_batch.changes import dynamodb
from kinesis_batch.changes.model import DELETE, UPSERT, EnvelopeError


def record(event: str, *, new: dict[str, Any] | None = None, identity: Any = None, **dynamo: Any) -> dict[str, Any]:
    body = {"ApproximateCreationDateTime": 1764000000123, "Keys": {"pk": {"S": "a"}, "sk": {"N": "1"}}, **dynamo}
    if new is not None:
        body["NewImage"] = new
    return {"eventName": event, "dynamodb": body, "userIdentity": identity, "tableName": "t"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"S": "text"}, "text"),
        ({"N": "42"}, 42),
        ({"N": "-7"}, -7),
        ({"N": str(2**53 + 1)}, 2**53 + 1),  # past a double's exact integers: still exact
        ({"N": str(2**64)}, Decimal(2**64)),  # past int64: an exact decimal
        ({"N": "12.50"}, Decimal("12.50")),
        ({"N": "1E+2"}, Decimal(100)),
        ({"BOOL": True}, True),
        ({"NULL": True}, None),
        ({"B": "AAEC"}, b"\x00\x01\x02"),
        ({"M": {"a": {"S": "x"}, "b": {"N": "1"}}}, {"a": "x", "b": 1}),
        ({"L": [{"S": "x"}, {"S": "y"}]}, ["x", "y"]),
        ({"SS": ["x", "y"]}, ["x", "y"]),
        ({"NS": ["1", "2"]}, [1, 2]),
        ({"NS": ["1", "2.5"]}, [Decimal(1), Decimal("2.5")]),
        ({"BS": ["AA=="]}, [b"\x00"]),
    ],
)
def test_every_attribute_type_becomes_its_exact_value(value: dict[str, Any], expected: Any) -> None:
    converted = dynamodb.attribute(value, "x")
    assert converted == expected
    assert type(converted) is type(expected)


@pytest.mark.parametrize(
    "value", [{"N": "abc"}, {"N": "NaN"}, {"B": "***"}, {"X": 1}, {"S": 1}, "plain", {"S": "a", "N": "1"}]
)
def test_a_malformed_attribute_is_refused(value: Any) -> None:
    with pytest.raises(EnvelopeError, match="malformed attribute"):
        dynamodb.attribute(value, "x")


def test_insert_and_modify_upsert_the_new_image_keyed_by_keys() -> None:
    change = dynamodb.unwrap(record("MODIFY", new={"pk": {"S": "a"}, "sk": {"N": "1"}, "v": {"N": "2"}}))
    assert (change.op, change.key, change.image) == (UPSERT, ("pk", "sk"), {"pk": "a", "sk": 1, "v": 2})
    assert change.position == (1764000000123000,) and not change.expired


def test_remove_deletes_by_the_keys_and_a_service_remove_is_an_expiry() -> None:
    removed = dynamodb.unwrap(record("REMOVE"))
    assert (removed.op, removed.image, removed.expired) == (DELETE, {"pk": "a", "sk": 1}, False)
    expired = dynamodb.unwrap(record("REMOVE", identity={"type": "Service", "principalId": "dynamodb.amazonaws.com"}))
    assert expired.op == DELETE and expired.expired


@pytest.mark.parametrize(
    ("extra", "micros"),
    [
        ({}, 1764000000123000),
        (
            {"ApproximateCreationDateTimePrecision": "MICROSECOND", "ApproximateCreationDateTime": 1764000000123456},
            1764000000123456,
        ),
        ({"ApproximateCreationDateTime": 1764000000123456}, 1764000000123456),  # too large for millis
    ],
)
def test_the_creation_time_is_in_microseconds_whatever_the_stream_precision(extra: dict[str, Any], micros: int) -> None:
    assert dynamodb.unwrap(record("INSERT", new={"pk": {"S": "a"}}, **extra)).position == (micros,)


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"eventName": "SOMETHING", "dynamodb": {}}, "not a DynamoDB change"),
        ({"eventName": "INSERT"}, "not a DynamoDB change"),
        ({"eventName": "INSERT", "dynamodb": {"Keys": {}}}, "no key"),
        (
            {"eventName": "INSERT", "dynamodb": {"Keys": {"pk": {"S": "a"}}, "ApproximateCreationDateTime": 1}},
            "malformed envelope",
        ),
        (record("INSERT", new={}, ApproximateCreationDateTime="yesterday"), "unparseable sequence"),
    ],
)
def test_records_that_are_not_changes_are_refused_with_their_reason(body: dict[str, Any], kind: str) -> None:
    with pytest.raises(EnvelopeError) as raised:
        dynamodb.unwrap(body)
    assert raised.value.kind == kind
