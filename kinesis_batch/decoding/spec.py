"""What a Spark task needs to decode, as JSON-able values: the settings, and what the driver
resolved at the run's start (the declared fields, the schema file's content, the descriptor
set), so that an executor needs none of the driver's files. The table's fields travel too, as
the read step found them: the tasks fit rows to them and add only what is new.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.columns import schema_from_text, schema_to_text
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.routing.routes import RouteRule


@dataclass(frozen=True)
class DecodeSpec:
    """``declared``: the fields a schema declares (None: inferred); ``schema_text``: an Avro
    schema file's text; ``descriptors``: a descriptor set's bytes; ``glue``: the registry's
    endpoint and region when records are in its format; ``table``: the table's fields now;
    ``widen``: the output format widens int32 and float32 columns; ``changes``: the rows are
    changes to apply (kinesis_batch.changes), None: events to append; ``routing``: each row goes
    to the table its route names (kinesis_batch.routing), ``tables`` holding the fields of the
    routes' tables that exist and ``declared_by_route`` those a ``--schema DIR`` declares."""

    settings: DecodeSettings
    declared: pa.Schema | None = None
    schema_text: str | None = None
    descriptors: bytes | None = None
    glue: dict[str, str | None] | None = None
    table: pa.Schema | None = None
    widen: bool = True
    changes: ChangeSettings | None = None
    routing: RouteRule | None = None
    tables: dict[str, pa.Schema] = field(default_factory=dict)
    declared_by_route: dict[str, pa.Schema] = field(default_factory=dict)

    def with_table(self, table: pa.Schema | None, *, widen: bool) -> DecodeSpec:
        return replace(self, table=table, widen=widen)

    def starting_fields(self) -> pa.Schema:
        """What the rows are fitted to first: the table's fields, or else the declared ones."""
        if self.table is not None and len(self.table):
            return self.table
        return self.declared if self.declared is not None else pa.schema([])

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": self.settings.to_json(),
            "declared": _schema_text(self.declared),
            "schema_text": self.schema_text,
            "descriptors": base64.b64encode(self.descriptors).decode() if self.descriptors else None,
            "glue": self.glue,
            "table": _schema_text(self.table),
            "widen": self.widen,
            "changes": self.changes.to_json() if self.changes else None,
            "routing": _rule_json(self.routing),
            "tables": {route: schema_to_text(fields) for route, fields in sorted(self.tables.items())},
            "declared_by_route": {r: schema_to_text(f) for r, f in sorted(self.declared_by_route.items())},
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> DecodeSpec:
        return cls(
            settings=DecodeSettings.from_json(body["settings"]),
            declared=_schema(body.get("declared")),
            schema_text=body.get("schema_text"),
            descriptors=base64.b64decode(body["descriptors"]) if body.get("descriptors") else None,
            glue=body.get("glue"),
            table=_schema(body.get("table")),
            widen=bool(body.get("widen", True)),
            changes=ChangeSettings.from_json(body["changes"]) if body.get("changes") else None,
            routing=_rule(body.get("routing")),
            tables={route: schema_from_text(text) for route, text in (body.get("tables") or {}).items()},
            declared_by_route={r: schema_from_text(t) for r, t in (body.get("declared_by_route") or {}).items()},
        )

    def declared_for(self, route: str) -> pa.Schema | None:
        """The fields declared for a route's table: its own ``--schema DIR`` file's, or everyone's."""
        return self.declared_by_route.get(route, self.declared)


def _rule_json(rule: RouteRule | None) -> dict[str, Any] | None:
    if rule is None:
        return None
    allowed = sorted(rule.allowed) if rule.allowed is not None else None
    return {"path": list(rule.path), "allowed": allowed, "max_new": rule.max_new}


def _rule(body: dict[str, Any] | None) -> RouteRule | None:
    if not body:
        return None
    allowed = frozenset(body["allowed"]) if body.get("allowed") is not None else None
    return RouteRule(tuple(body["path"]), allowed, int(body["max_new"]))


def _schema_text(schema: pa.Schema | None) -> str | None:
    return schema_to_text(schema) if schema is not None else None


def _schema(text: str | None) -> pa.Schema | None:
    return schema_from_text(text) if text else None


__all__ = ["DecodeSpec"]
