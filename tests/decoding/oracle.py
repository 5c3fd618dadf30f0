"""A plain-Python decoder of JSON records, record by record, from the documented rules
(docs/architecture.md, "Decoding records into typed rows"; docs/outputs.md, "Decoded rows and
dead letters") and nothing of pages, tasks or Arrow: what the table and the dead letters of one
shard range must be.

Kinds are plain values: ``"bool"``, ``"int"`` (int64), ``"float"`` (double), ``"text"``,
``("object", ((name, kind), ...))`` and ``("list", kind)``. A table is a dict of name to kind,
in column order.

The rules, one record at a time, each against the table as the records before it left it:
- a payload with gzip's magic bytes is inflated (one that does not inflate: ``decompress``);
- it must be JSON (else ``decode``), holding an object or a list of objects, a row each (else
  ``decode``); an integer past int64 cannot be read (``decode``) but as a float column's double;
- a field named like a column of kinesis-batch's own, with a value, is a dead letter (``schema``);
- a value fits its column: null always; an integer an int or float column (as a double); a
  number with no fraction an int column; text a text column; an object an object column, field
  by field (new fields join it); a list a list column, item by item; an empty object or list is
  one with nothing set. Anything else is a dead letter (``schema``), and so is the record whole;
- a new field with a value becomes a new column of that value's kind (its empty parts left
  out; a value that is only null, ``[]`` or ``{}`` adds none, and is :data:`EMPTY` in its row),
  unless its record is a dead letter;
- with a route (``route_by``), each record's route picks the table it is fitted to;
- with changes (``key`` and ``sequence_by``), a record that fits but has a row with no key or
  whose sequence is not a whole number is refused (``changes``), and types nothing.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

Kind = str | tuple[str, Any]
Table = dict[str, Kind]

INT64 = (-(2**63), 2**63 - 1)
GZIP = b"\x1f\x8b"


@dataclass(frozen=True)
class Row:
    """A record's rows: each object's values, by the table's field names (absent: null)."""

    values: tuple[dict[str, Any], ...]
    route: str | None = None


@dataclass(frozen=True)
class Dead:
    """A record that is one dead letter, and the stage that refused it (or ``other``)."""

    stage: str
    other: str | None = None  # a record both refused and of a changed type: its page decides which


class Unfit(Exception):
    """A value that does not fit its column (or cannot be read at all: ``stage``)."""

    def __init__(self, stage: str = "schema") -> None:
        self.stage = stage


@dataclass
class Oracle:
    """One shard range's decoder: ``tables`` (by route; ``None`` without routing) grow as it goes."""

    tables: dict[str | None, Table]
    reserved: frozenset[str]
    route_by: str | None = None
    key: str | None = None
    sequence_by: str | None = None
    outcomes: list[Row | Dead] = field(default_factory=list)

    def record(self, payload: bytes) -> Row | Dead:
        outcome = self._record(payload)
        self.outcomes.append(outcome)
        return outcome

    def _record(self, payload: bytes) -> Row | Dead:
        if payload.startswith(GZIP):
            try:
                payload = gzip.decompress(payload)
            except (OSError, EOFError, zlib.error):
                return Dead("decompress")
        try:
            value = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return Dead("decode")
        objects = value if isinstance(value, list) else [value]
        if not objects and isinstance(value, list):
            return Row(())
        if not all(isinstance(item, dict) for item in objects):
            return Dead("decode")
        route = self._route(objects)
        table = dict(self.tables[route])
        refusable = self.key is not None and any(self._refused(item) for item in objects)
        if any(_too_big(item, ("object", tuple(table.items()))) for item in objects):
            return Dead("decode", "schema")  # which it is first, when both, is not a rule
        rows = []
        try:
            for item in objects:
                if any(name in self.reserved and item[name] is not None for name in item):
                    raise Unfit()
                rows.append(_object(item, table))
        except Unfit as unfit:
            return Dead(unfit.stage, "changes" if refusable else None)
        if refusable:
            return Dead("changes", "schema")
        self.tables[route] = table
        return Row(tuple(rows), route)

    def _refused(self, row: dict[str, Any]) -> bool:
        assert self.key is not None and self.sequence_by is not None
        sequence = row.get(self.sequence_by)
        whole = isinstance(sequence, int) and not isinstance(sequence, bool)
        return row.get(self.key) in (None, EMPTY) or not (whole or _digits(sequence))

    def _route(self, objects: list[dict[str, Any]]) -> str | None:
        if self.route_by is None:
            return None
        routes = {item.get(self.route_by) for item in objects}
        assert len(routes) == 1 and routes <= set(self.tables), "the draws give each record one known route"
        return routes.pop()  # type: ignore[no-any-return]


def kind_of(value: Any) -> Kind | None:
    """A JSON value's kind (None: null, or nothing but empty parts)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        fields = tuple((name, kind) for name, item in value.items() if (kind := kind_of(item)) is not None)
        return ("object", fields) if fields else None
    items = [kind for item in value if (kind := kind_of(item)) is not None]
    assert len(set(items)) <= 1, "the draws give a list items of one kind"
    return ("list", items[0]) if items else None


def _object(item: dict[str, Any], table: Table) -> dict[str, Any]:
    """``item`` fitted to ``table`` (which gains its new fields): its values by the table's names."""
    for name, value in item.items():
        if name in table:
            continue
        kind = kind_of(value)
        if kind is not None:
            table[name] = kind
    values = {name: fit(item.get(name), kind, table, name) for name, kind in list(table.items())}
    return values | {name: EMPTY for name, value in item.items() if name not in table and value is not None}


class _Empty:
    """An empty list or object in a field with no column yet: null, or empty if a record beside
    it in its page gave the field its type (the page is typed as one)."""

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY = _Empty()


def fit(value: Any, kind: Kind, holder: dict[str, Kind], name: str) -> Any:
    """``value`` as its column of ``kind`` holds it; an object or list column in ``holder``
    gains the fields its values bring."""
    if value is None:
        return None
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise Unfit()
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Unfit()
        if isinstance(value, float) and not (value.is_integer() and INT64[0] <= value <= INT64[1]):
            raise Unfit()
        return int(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Unfit()
        return float(value)
    if kind == "text":
        if isinstance(value, str):
            return value
        raise Unfit()
    assert isinstance(kind, tuple)
    if kind[0] == "object":
        if not isinstance(value, dict):
            raise Unfit()
        fields = dict(kind[1])
        values = _object(value, fields)
        holder[name] = ("object", tuple(fields.items()))
        return values
    if not isinstance(value, list):
        raise Unfit()
    item_kind = kind[1]
    items = {"item": item_kind}
    values = [fit(item, item_kind, items, "item") for item in value]
    holder[name] = ("list", items["item"])
    return values


def _digits(value: Any) -> bool:
    """Text of a whole number (producers that quote their numbers): a sequence too."""
    return isinstance(value, str) and value.strip().lstrip("+-").isdigit()


def _too_big(value: Any, kind: Kind | None) -> bool:
    """An integer past int64 anywhere in ``value``, but where its column (``kind``) is a float."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return kind != "float" and not INT64[0] <= value <= INT64[1]
    if isinstance(value, dict):
        fields = dict(kind[1]) if isinstance(kind, tuple) and kind[0] == "object" else {}
        return any(_too_big(item, fields.get(name)) for name, item in value.items())
    if isinstance(value, list):
        item_kind = kind[1] if isinstance(kind, tuple) and kind[0] == "list" else None
        return any(_too_big(item, item_kind) for item in value)
    return False


__all__ = ["EMPTY", "Dead", "Kind", "Oracle", "Row", "Table", "fit", "kind_of"]
