"""Histories of changes drawn by Hypothesis, written as their sources write them, and the oracle
they must end in.

A history has a mode (``upsert``, or a source's envelope: ``dynamodb``, ``dms``, ``debezium``)
and a key shape (one to three columns for ``--key a,b,c``, one or two for DynamoDB, whose tables
have a partition and a sort key; text, integers past 2**53 and past int64, decimals, bytes), a
few keys whose first column several share, each key's inserts, updates and deletes at distinct
source times, and their delivery: duplicated, in any order (deletes before older updates,
changes held back past the next batch), across two shards, with malformed records among them
and whole batches of them, cut into batches anywhere.

The oracle knows nothing of the product: a key's state is its newest change by source time, a
row or, after a delete, nothing.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

BASE_MILLIS = 1_764_000_000_000
MODES = ("upsert", "dynamodb", "dms", "debezium")
#: The kinds of key column each mode's records can carry (DMS's and Debezium's: JSON's, as upsert's).
UPSERT_KINDS = ("text", "int", "int_past_2_53")
DYNAMODB_KINDS = ("S", "N", "N_past_2_53", "N_past_int64", "N_fraction", "B")
NAMES = ("pk", "sk", "tk")
#: Records that are no change: each must land as exactly one dead letter.
MALFORMED = {
    # Refused by the changes stage after their fields typed the page's columns: {"pk": "x"} against
    # an integer key, {"ts": "soon"} against the integer times.
    "upsert": (
        b'{"pk": 1, "version": ',
        b"not json at all",
        b'{"version": 3, "ts": 4}',
        b'{"pk": "x", "ts": null}',
        b'{"pk": "x", "ts": "soon"}',
        b'{"pk": null, "ts": "soon", "stray": [1]}',
    ),
    "dynamodb": (b'{"eventName": "MODIFY"}', b"\xff\xfe not json", b'{"eventName": "INSERT", "dynamodb": {}}'),
    "dms": (b'{"data": {"pk": 1}}', b'{"data": {}, "metadata": {"record-type": "data", "operation": "zap"}}'),
    "debezium": (b'{"op": "x"}', b'{"op": "u", "source": {"connector": "postgresql", "lsn": 1}}', b"[1, 2"),
}


@dataclass(frozen=True)
class Shape:
    """The mode and the key's columns, (name, kind) each."""

    mode: str
    columns: tuple[tuple[str, str], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    def key(self, index: int) -> tuple[Any, ...]:
        """Logical key ``index``'s value in each column, as the table holds it: keys 2n and 2n+1
        share their first column when there are more."""
        return tuple(
            _value(kind, index // 2 if position == 0 and len(self.columns) > 1 else index)
            for position, (_, kind) in enumerate(self.columns)
        )


@dataclass(frozen=True)
class Change:
    """Key ``key`` at source time ``time``: a row whose version is the time, or a delete
    (``deleted``; ``expired``: DynamoDB's time to live)."""

    key: int
    time: int
    deleted: bool
    expired: bool = False


@dataclass(frozen=True)
class Delivery:
    """One record as put into a shard: a change, or malformed bytes (``change`` None)."""

    body: bytes
    shard: int
    change: Change | None = None


@dataclass(frozen=True)
class History:
    shape: Shape
    batches: tuple[tuple[Delivery, ...], ...]
    maintained_after: frozenset[int]  # the batches after which maintenance runs


def oracle(shape: Shape, changes: list[Change]) -> dict[tuple[Any, ...], int]:
    """Each key's state after ``changes``: the version (its time) of its newest change, unless
    that change deleted it."""
    newest: dict[int, Change] = {}
    for change in changes:
        held = newest.get(change.key)
        if held is None or change.time > held.time:
            newest[change.key] = change
    return {shape.key(key): change.time for key, change in newest.items() if not change.deleted}


def body(shape: Shape, change: Change) -> bytes:
    """The record a source writes for ``change``."""
    key = shape.key(change.key)
    keyed = dict(zip(shape.names, key, strict=True))
    row = {**keyed, "version": change.time, "note": f"v{change.time}"}
    if shape.mode == "upsert":
        said = {**keyed, "ts": change.time, "deleted": True} if change.deleted else {**row, "ts": change.time}
        return json.dumps({**said, "deleted": change.deleted}).encode()
    if shape.mode == "dms":  # ordered by the commit time, then the transaction
        moment = datetime.fromtimestamp(BASE_MILLIS / 1000, UTC) + timedelta(milliseconds=change.time)
        metadata = {
            "timestamp": moment.isoformat().replace("+00:00", "Z"),
            "record-type": "data",
            "operation": "delete" if change.deleted else "update",
            "transaction-id": change.time,
            "schema-name": "shop",
            "table-name": "items",
        }
        return json.dumps({"data": keyed if change.deleted else row, "metadata": metadata}).encode()
    if shape.mode == "debezium":  # ordered by PostgreSQL's log position
        source = {"connector": "postgresql", "lsn": 1_000 + change.time}
        image = {"before": keyed, "after": None} if change.deleted else {"before": None, "after": row}
        return json.dumps({**image, "op": "d" if change.deleted else "u", "source": source}).encode()
    keys = {name: _dynamodb(kind, value) for (name, kind), value in zip(shape.columns, key, strict=True)}
    record: dict[str, Any] = {"ApproximateCreationDateTime": BASE_MILLIS + change.time, "Keys": keys}
    if change.deleted:
        record["OldImage"] = dict(keys)
    else:
        record["NewImage"] = {**keys, "version": {"N": str(change.time)}, "note": {"S": f"v{change.time}"}}
    event = {
        "eventName": "REMOVE" if change.deleted else "MODIFY",
        "eventSource": "aws:dynamodb",
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"} if change.expired else None,
        "dynamodb": record,
    }
    return json.dumps(event).encode()


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    mode = draw(st.sampled_from(MODES))
    kinds = DYNAMODB_KINDS if mode == "dynamodb" else UPSERT_KINDS
    width = draw(st.integers(1, 2 if mode == "dynamodb" else 3))
    return Shape(mode, tuple((NAMES[i], draw(st.sampled_from(kinds))) for i in range(width)))


@st.composite
def histories(draw: st.DrawFn, shape: Shape | None = None) -> History:
    shape = shape or draw(shapes())
    keys = draw(st.integers(1, 5))
    changes: list[Change] = []
    for key in range(keys):
        times = draw(st.lists(st.integers(0, 60), min_size=1, max_size=4, unique=True))
        for time in times:
            deleted = draw(st.booleans())
            expired = deleted and shape.mode == "dynamodb" and draw(st.booleans())
            changes.append(Change(key, time, deleted, expired))
    sent = [change for change in changes for _ in range(draw(st.integers(1, 2)))]  # duplicates
    deliveries = [Delivery(body(shape, change), draw(st.integers(0, 1)), change) for change in sent]
    deliveries = list(draw(st.permutations(deliveries)))
    for _ in range(draw(st.integers(0, 2))):
        bad = Delivery(draw(st.sampled_from(MALFORMED[shape.mode])), draw(st.integers(0, 1)))
        deliveries.insert(draw(st.integers(0, len(deliveries))), bad)
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(deliveries) - 1)), max_size=3)))
    batches = [tuple(deliveries[a:b]) for a, b in zip([0, *cuts], [*cuts, len(deliveries)], strict=True)]
    batches = [batch for batch in batches if batch]
    if draw(st.booleans()):  # a whole batch of malformed records
        bad = tuple(Delivery(draw(st.sampled_from(MALFORMED[shape.mode])), 0) for _ in range(draw(st.integers(1, 2))))
        batches.insert(draw(st.integers(0, len(batches))), bad)
    maintained = draw(st.sets(st.integers(0, len(batches) - 1), max_size=1))
    return History(shape, tuple(batches), frozenset(maintained))


def _value(kind: str, index: int) -> Any:
    """Key value ``index`` of a column of ``kind``, as the table holds it; distinct for distinct
    indexes."""
    if kind in ("text", "S"):
        return f"k'{index}é"  # a quote: the look-up writes SQL literals
    if kind in ("int", "N"):
        return index * 7 - 10
    if kind in ("int_past_2_53", "N_past_2_53"):
        return 2**53 + 1 + 2 * index  # no float holds it
    if kind == "N_past_int64":
        return Decimal(2**64 + index)
    if kind == "N_fraction":
        return Decimal(index) + Decimal("0.25")
    if kind == "B":
        return bytes([index, 255, 0])
    raise ValueError(kind)


def _dynamodb(kind: str, value: Any) -> dict[str, str]:
    if kind == "S":
        return {"S": value}
    if kind == "B":
        return {"B": base64.b64encode(value).decode()}
    return {"N": str(value)}


__all__ = [
    "DYNAMODB_KINDS",
    "MALFORMED",
    "MODES",
    "UPSERT_KINDS",
    "Change",
    "Delivery",
    "History",
    "Shape",
    "body",
    "histories",
    "oracle",
    "shapes",
]
