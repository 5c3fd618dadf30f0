"""Debezium's change events, as Debezium Server's Kinesis sink writes them: the envelope
``{"before", "after", "op", "source", "ts_ms"}``, alone or inside the JSON converter's schema
wrapper ``{"schema": ..., "payload": {...}}``.

``op``: c (create), u (update), r (a snapshot's read) upsert ``after``; d deletes ``before``.
A null payload (the tombstone Debezium sends after a delete for Kafka's compaction) and a
truncate (t) or message (m) are skipped. The order is the connector's own position:

- postgresql: ``source.lsn``;
- mysql, mariadb: the binlog's file number (``mysql-bin.000003``: 3), ``source.pos``, ``source.row``;
- sqlserver: ``source.commit_lsn``, ``source.change_lsn`` (hex triples), ``source.event_serial_no``;
- any other connector: ``source.ts_ms``, then Kinesis order.

The row's values are taken as the JSON converter wrote them; the schema wrapper's logical types
(Decimal as bytes, times as epoch numbers) are not interpreted.
"""

from __future__ import annotations

import re
from typing import Any

from kinesis_batch.changes.model import DELETE, UPSERT, EnvelopeError, Skipped, Unwrapped

OPERATIONS = {"c": UPSERT, "u": UPSERT, "r": UPSERT, "d": DELETE}
SKIPPED = {"t": "truncate", "m": "message"}


def unwrap(body: dict[str, Any] | None) -> Unwrapped | Skipped:
    if body is None:
        return Skipped("tombstone")
    payload = body.get("payload", body) if "schema" in body else body
    if payload is None:
        return Skipped("tombstone")
    if not isinstance(payload, dict):
        raise EnvelopeError("malformed envelope", "payload is not an object")
    code = payload.get("op")
    if code in SKIPPED:
        return Skipped(SKIPPED[code])
    op = OPERATIONS.get(code) if isinstance(code, str) else None
    if op is None:
        raise EnvelopeError("malformed envelope", f"op is {code!r}; expected c, u, d or r")
    image = payload.get("before" if op == DELETE else "after")
    if not isinstance(image, dict):
        side = "before" if op == DELETE else "after"
        raise EnvelopeError("malformed envelope", f"op {code} without {side} (for deletes: set REPLICA IDENTITY)")
    source = payload.get("source")
    return Unwrapped(op, dict(image), position(source if isinstance(source, dict) else {}))


def position(source: dict[str, Any]) -> tuple[int, ...] | None:
    """The connector's own position of a change (see the module's list), None if it gives none."""
    connector = source.get("connector")
    if connector == "postgresql" and source.get("lsn") is not None:
        return (_whole(source["lsn"], "source.lsn"),)
    if connector in ("mysql", "mariadb") and source.get("file") is not None:
        found = re.search(r"(\d+)$", str(source["file"]))
        if found is None:
            raise EnvelopeError("unparseable sequence", f"source.file is {source['file']!r}, not a numbered binlog")
        return (
            int(found.group(1)),
            _whole(source.get("pos", 0), "source.pos"),
            _whole(source.get("row", 0), "source.row"),
        )
    if connector == "sqlserver" and source.get("commit_lsn") is not None:
        return (
            *_lsn(source["commit_lsn"]),
            *_lsn(source.get("change_lsn") or "0:0:0"),
            _whole(source.get("event_serial_no", 0), "source.event_serial_no"),
        )
    if source.get("ts_ms") is not None:
        return (_whole(source["ts_ms"], "source.ts_ms"),)
    return None


def _whole(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise EnvelopeError("unparseable sequence", f"{path} is {value!r}")
    try:
        return int(value)
    except ValueError as exc:
        raise EnvelopeError("unparseable sequence", f"{path} is {value!r}") from exc


def _lsn(text: Any) -> tuple[int, int, int]:
    """A SQL Server LSN, ``00000025:00000d98:0002``, as its three numbers."""
    parts = str(text).split(":")
    try:
        first, second, third = (int(part, 16) for part in parts)
    except ValueError as exc:
        raise EnvelopeError("unparseable sequence", f"{text!r} is not a SQL Server LSN") from exc
    return first, second, third


__all__ = ["position", "unwrap"]
