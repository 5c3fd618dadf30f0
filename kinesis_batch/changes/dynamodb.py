"""DynamoDB's change records as it writes them to Kinesis Data Streams::

    {"eventName": "INSERT" | "MODIFY" | "REMOVE", "tableName": ..., "userIdentity": ...,
     "dynamodb": {"ApproximateCreationDateTime": 1700000000123,
                  "ApproximateCreationDateTimePrecision": "MILLISECOND" | "MICROSECOND",
                  "Keys": {...}, "NewImage": {...}, "OldImage": {...}}}

The key is ``Keys``' attribute names; the order, the creation time in microseconds (DynamoDB
says its records on Kinesis may come duplicated and out of order, and are ordered by it);
REMOVE deletes, and a REMOVE by ``userIdentity`` of type Service is a time-to-live expiry.

Attribute values in DynamoDB JSON become typed values: S text, N an exact number (an integer
stays an integer, int64 or past it an exact decimal; a fraction an exact decimal), BOOL, NULL,
M a struct, L a list, SS/NS/BS lists, B bytes.
"""

from __future__ import annotations

import base64
import binascii
from decimal import Decimal, InvalidOperation
from typing import Any

from kinesis_batch.changes.model import DELETE, UPSERT, EnvelopeError, Unwrapped

EVENTS = {"INSERT": UPSERT, "MODIFY": UPSERT, "REMOVE": DELETE}
INT64 = 2**63
#: Fractions keep 18 digits (and 20 before the point): one decimal type per column, exact for
#: every number DynamoDB's 38 digits can hold with at most 18 after the point.
SCALE = Decimal(10) ** -18


def unwrap(body: dict[str, Any] | None) -> Unwrapped:
    body = body if body is not None else {}  # a null record: no eventName either
    event = body.get("eventName")
    op = EVENTS.get(event) if isinstance(event, str) else None
    record = body.get("dynamodb")
    if op is None or not isinstance(record, dict):
        raise EnvelopeError("not a DynamoDB change", f"eventName is {event!r}; expected INSERT, MODIFY or REMOVE")
    keys = record.get("Keys")
    if not isinstance(keys, dict) or not keys:
        raise EnvelopeError("no key", "dynamodb.Keys is missing or empty")
    image = record.get("NewImage") if op == UPSERT else keys
    if not isinstance(image, dict):
        raise EnvelopeError("malformed envelope", f"{event} without dynamodb.NewImage")
    identity = body.get("userIdentity")
    expired = op == DELETE and isinstance(identity, dict) and identity.get("type") == "Service"
    converted = {name: attribute(value, name) for name, value in image.items()}
    converted.update({name: attribute(value, name) for name, value in keys.items()})  # Keys are the truth
    return Unwrapped(op, converted, (created_micros(record),), tuple(sorted(keys)), expired)


def created_micros(record: dict[str, Any]) -> int:
    """ApproximateCreationDateTime in microseconds (it is in milliseconds unless the stream was
    set to microsecond precision; a value too large for milliseconds is taken as microseconds)."""
    value = record.get("ApproximateCreationDateTime")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EnvelopeError("unparseable sequence", f"dynamodb.ApproximateCreationDateTime is {value!r}")
    micro = record.get("ApproximateCreationDateTimePrecision") == "MICROSECOND" or abs(value) >= 1e14
    return int(value) if micro else round(value * 1000)


def attribute(value: Any, path: str) -> Any:
    """One attribute value of DynamoDB JSON (``{"N": "12.50"}``) as a plain value."""
    if not isinstance(value, dict) or len(value) != 1:
        raise EnvelopeError("malformed attribute", f"{path} is not a DynamoDB attribute value ({{TYPE: value}})")
    ((kind, inner),) = value.items()
    if kind == "S" and isinstance(inner, str):
        return inner
    if kind == "N" and isinstance(inner, str):
        return number(inner, path)
    if kind == "BOOL" and isinstance(inner, bool):
        return inner
    if kind == "NULL":
        return None
    if kind == "B" and isinstance(inner, str):
        return _bytes(inner, path)
    if kind == "M" and isinstance(inner, dict):
        return {name: attribute(item, f"{path}.{name}") for name, item in inner.items()}
    if kind == "L" and isinstance(inner, list):
        return [attribute(item, f"{path}[{i}]") for i, item in enumerate(inner)]
    if kind == "SS" and isinstance(inner, list) and all(isinstance(item, str) for item in inner):
        return list(inner)
    if kind == "NS" and isinstance(inner, list):
        numbers = [number(str(item), path) for item in inner]
        return [Decimal(n) for n in numbers] if any(isinstance(n, Decimal) for n in numbers) else numbers
    if kind == "BS" and isinstance(inner, list):
        return [_bytes(str(item), path) for item in inner]
    raise EnvelopeError("malformed attribute", f"{path} has type {kind!r} with a value of {type(inner).__name__}")


def number(text: str, path: str) -> int | Decimal:
    """An N value, exactly: an int when it is a whole number within int64, else a decimal."""
    try:
        exact = Decimal(text)
    except InvalidOperation as exc:
        raise EnvelopeError("malformed attribute", f"{path} is N {text!r}, not a number") from exc
    if not exact.is_finite():
        raise EnvelopeError("malformed attribute", f"{path} is N {text!r}, not a finite number")
    if exact == exact.to_integral_value() and "." not in text and "e" not in text.lower():
        whole = int(exact)
        return whole if -INT64 <= whole < INT64 else Decimal(whole)
    return exact.quantize(SCALE)


def _bytes(text: str, path: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise EnvelopeError("malformed attribute", f"{path} is B, not base64") from exc


__all__ = ["attribute", "created_micros", "number", "unwrap"]
