"""Change records shaped as their sources document them, and the oracle: an independent fold of
every change sent, which a table of current state must equal."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

BASE_MILLIS = 1_764_000_000_000  # 2025-11-24, as DynamoDB stamps ApproximateCreationDateTime


@dataclass(frozen=True)
class Sent:
    """One change as sent: its key, its time (the oracle's order), and the row it leaves (None: a delete)."""

    key: str
    millis: int
    row: dict[str, Any] | None
    body: bytes


def dynamodb_change(key: str, millis: int, version: int | None, *, ttl: bool = False) -> Sent:
    """An INSERT/MODIFY (``version`` given) or REMOVE (None) of item ``key`` at ``millis``, with
    every attribute type DynamoDB has. The table's key has two attributes, as most DynamoDB
    tables' do: a partition key ``pk`` (text) that ten items share, and a sort key ``sk`` (a
    number): ``key`` but its last character, and that character's code."""
    keys = {"pk": {"S": key[:-1]}, "sk": {"N": str(ord(key[-1]))}}
    body: dict[str, Any] = {
        "awsRegion": "us-east-1",
        "eventID": f"{key}-{millis}",
        "eventName": "REMOVE" if version is None else ("INSERT" if version == 0 else "MODIFY"),
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"} if ttl else None,
        "recordFormat": "application/json",
        "tableName": "items",
        "eventSource": "aws:dynamodb",
        "dynamodb": {"ApproximateCreationDateTime": millis, "Keys": keys, "SizeBytes": 100},
    }
    if version is None:
        body["dynamodb"]["OldImage"] = {**keys, "version": {"N": "1"}}
        return Sent(key, millis, None, json.dumps(body).encode())
    image = {
        **keys,
        "version": {"N": str(version)},
        "price": {"N": f"{version}.50"},
        "big": {"N": str(2**53 + 1 + version)},
        "name": {"S": f"{key}-v{version}"},
        "active": {"BOOL": version % 2 == 0},
        "nothing": {"NULL": True},
        "tags": {"SS": ["a", f"v{version}"]},
        "scores": {"NS": ["1", str(version)]},
        "address": {"M": {"city": {"S": "Oslo"}, "zip": {"N": str(1000 + version)}}},
        "history": {"L": [{"N": "1"}, {"N": str(version)}]},
        "blob": {"B": base64.b64encode(bytes([version % 256])).decode()},
    }
    if version % 3 == 1:
        del image["name"]  # a newer image without an attribute: the row's column is null
    body["dynamodb"]["NewImage"] = image
    row = {
        "pk": key[:-1],
        "sk": ord(key[-1]),
        "version": version,
        "price": Decimal(f"{version}.50"),
        "big": 2**53 + 1 + version,
        "name": None if version % 3 == 1 else f"{key}-v{version}",
        "active": version % 2 == 0,
        "tags": ["a", f"v{version}"],
        "scores": [1, version],
        "address": {"city": "Oslo", "zip": 1000 + version},
        "history": [1, version],
        "blob": bytes([version % 256]),
    }
    return Sent(key, millis, row, json.dumps(body).encode())


def oracle(changes: Iterable[Sent]) -> dict[str, dict[str, Any]]:
    """Each key's newest change (by its time; the tests send no two changes of a key at one
    time but a duplicate): its row, or nothing after a delete."""
    newest: dict[str, Sent] = {}
    for change in changes:
        held = newest.get(change.key)
        if held is None or change.millis > held.millis:
            newest[change.key] = change
    return {key: change.row for key, change in newest.items() if change.row is not None}


def shuffled_history(keys: int, versions: int, *, seed: int = 7, sharing: int = 10) -> list[Sent]:
    """Each key's versions, some deleted, duplicated and delivered out of order; ``sharing``
    (1 to 10) items share each partition key (see :func:`dynamodb_change`)."""
    rng = random.Random(seed)
    sent: list[Sent] = []
    for k in range(keys):
        key = f"item-{k // sharing:03d}-{k % sharing}"
        millis = BASE_MILLIS + k
        for version in range(versions):
            millis += 1000
            sent.append(dynamodb_change(key, millis, version))
        if k % 4 == 0:
            sent.append(dynamodb_change(key, millis + 1000, None, ttl=k % 8 == 0))
    sent += rng.sample(sent, len(sent) // 10)  # duplicates
    rng.shuffle(sent)
    return sent


def put_changes(client: Any, stream: str, changes: list[Sent]) -> None:
    """Each change with its item's key as the partition key (so a key's changes share a shard)."""
    for first in range(0, len(changes), 500):
        batch = [{"Data": c.body, "PartitionKey": c.key} for c in changes[first : first + 500]]
        assert client.put_records(StreamName=stream, Records=batch)["FailedRecordCount"] == 0


def table_state(rows: dict[str, list[Any]]) -> dict[str, dict[str, Any]]:
    """A table's rows (as pydict) by key, only the item's own columns."""
    names = [n for n in rows if n in ORACLE_COLUMNS]
    count = len(rows["pk"])
    state = {}
    for i in range(count):
        row = {name: rows[name][i] for name in names}
        state[row["pk"] + chr(row["sk"])] = row
    assert len(state) == count, "more than one row for a key"
    return state


ORACLE_COLUMNS = (
    *("pk", "sk", "version", "price", "big", "name", "active"),
    *("tags", "scores", "address", "history", "blob"),
)


# (key, op, position, depth, sequence number)
Change = tuple[str, str, list[int] | None, int, str]


def changes(*rows: Change, shard: str = "s-0") -> pa.Table:
    return pa.table(
        {
            "k": [r[0] for r in rows],
            "change_op": [r[1] for r in rows],
            "change_position": pa.array([r[2] for r in rows], pa.list_(pa.int64())),
            "lineage_depth": pa.array([r[3] for r in rows], pa.int32()),
            "sequence_number": [r[4] for r in rows],
            "sub_sequence_number": pa.array([0] * len(rows), pa.int64()),
            "shard_id": [shard] * len(rows),
        }
    )


BIG = "49" + "9" * 54  # a 56-digit sequence number: only integers order it
