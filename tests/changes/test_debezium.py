"""Debezium's change events as its Kinesis sink writes them, with and without the JSON
converter's schema wrapper, from the Postgres, MySQL and SQL Server connectors."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.changes import debezium
from kinesis_batch.changes.model import DELETE, UPSERT, EnvelopeError, Skipped

POSTGRES = {"connector": "postgresql", "lsn": 22910504, "txId": 556, "ts_ms": 1764000000000, "snapshot": "false"}
MYSQL = {"connector": "mysql", "file": "mysql-bin.000003", "pos": 154, "row": 1, "server_id": 223344, "ts_ms": 1}
SQLSERVER = {"connector": "sqlserver", "commit_lsn": "00000025:00000d98:0003", "change_lsn": "00000025:00000d98:0002"}


def event(op: str, source: dict[str, Any], *, wrapped: bool = False) -> dict[str, Any]:
    payload = {"before": {"id": 1, "v": "old"}, "after": {"id": 1, "v": "new"}, "op": op, "source": source, "ts_ms": 1}
    if op == "d":
        payload["after"] = None
    if op in ("c", "r"):
        payload["before"] = None
    return (
        {"schema": {"type": "struct", "name": "dbserver1.public.items.Envelope"}, "payload": payload}
        if wrapped
        else payload
    )


@pytest.mark.parametrize("wrapped", [False, True], ids=["bare", "schema-wrapper"])
@pytest.mark.parametrize(
    ("op", "expected", "image"),
    [("c", UPSERT, "new"), ("u", UPSERT, "new"), ("r", UPSERT, "new"), ("d", DELETE, "old")],
)
def test_each_op_upserts_after_or_deletes_before(op: str, expected: str, image: str, wrapped: bool) -> None:
    change = debezium.unwrap(event(op, POSTGRES, wrapped=wrapped))
    assert not isinstance(change, Skipped)
    assert (change.op, change.image) == (expected, {"id": 1, "v": image})


@pytest.mark.parametrize(
    ("source", "position"),
    [
        (POSTGRES, (22910504,)),
        (MYSQL, (3, 154, 1)),
        ({**MYSQL, "connector": "mariadb"}, (3, 154, 1)),
        (SQLSERVER, (0x25, 0xD98, 3, 0x25, 0xD98, 2, 0)),
        ({"connector": "oracle", "ts_ms": 1764000000000}, (1764000000000,)),
        ({}, None),
    ],
    ids=["postgresql", "mysql", "mariadb", "sqlserver", "other", "none"],
)
def test_the_order_is_the_connectors_own_position(source: dict[str, Any], position: tuple[int, ...] | None) -> None:
    change = debezium.unwrap(event("u", source))
    assert not isinstance(change, Skipped) and change.position == position


def test_a_later_binlog_file_orders_after_an_earlier_one_at_any_offset() -> None:
    early = debezium.position({**MYSQL, "file": "mysql-bin.000009", "pos": 99999})
    late = debezium.position({**MYSQL, "file": "mysql-bin.000010", "pos": 4})
    assert early is not None and late is not None and early < late


@pytest.mark.parametrize(
    ("body", "kind"),
    [(None, "tombstone"), ({"schema": {}, "payload": None}, "tombstone"), (event("t", POSTGRES), "truncate")],
)
def test_tombstones_truncates_and_messages_are_skipped(body: Any, kind: str) -> None:
    assert debezium.unwrap(body) == Skipped(kind)


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"op": "x", "after": {}}, "malformed envelope"),
        ({"op": "d", "before": None}, "malformed envelope"),
        (event("u", {"connector": "postgresql", "lsn": "abc"}), "unparseable sequence"),
        (event("u", {"connector": "mysql", "file": "binlog"}), "unparseable sequence"),
        (event("u", {"connector": "sqlserver", "commit_lsn": "zz"}), "unparseable sequence"),
    ],
)
def test_malformed_events_are_refused_with_their_reason(body: dict[str, Any], kind: str) -> None:
    with pytest.raises(EnvelopeError) as raised:
        debezium.unwrap(body)
    assert raised.value.kind == kind
