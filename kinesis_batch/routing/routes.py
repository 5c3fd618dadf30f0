"""Routing's rules (pure): which table a record names, and which of those a run may write.

- **A route value** is read from the decoded record (after the transform) at a dotted path
  (``metadata.table-name``, ``tableName``, ``type``); a source's changes (``--changes dms``)
  from the record as the source wrote it, its envelope (:func:`value_at`). It names one table, so it must be text of
  letters, digits, ``_`` and ``-``, 1 to :data:`MAX_LENGTH` characters, not starting with ``_``:
  no ``/``, ``.`` or space can reach another folder or namespace, and a leading ``_`` is what
  readers and our own bookkeeping treat as hidden. A record whose value is missing or breaks
  the rule is a dead letter with the reason (:func:`route_values`).
- **The output template** holds ``{route}`` once (:func:`check_template`); :func:`table_of`
  puts a value in it.
- **Which routes a run accepts** (:class:`RouteRule`): with ``--routes``, those only; without,
  every table already made plus at most ``max_new`` new ones per run (:func:`new_tables`), so a
  producer sending ten thousand values cannot make ten thousand tables.
- **A run without ``--route-by``** has one table, that of ``--output`` itself: the rule
  :meth:`RouteRule.single`, whose every record takes the route :data:`SINGLE` without reading it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kinesis_batch.bounds import NOT_NEGATIVE
from kinesis_batch.errors import IllegalArgumentError

ROUTE = "{route}"
MAX_LENGTH = 128
DEFAULT_MAX_NEW = 20
_NAME = re.compile(rf"[A-Za-z0-9-][A-Za-z0-9_-]{{0,{MAX_LENGTH - 1}}}")

#: What a route value that cannot name a table is (the dead letter's reason kinds).
MISSING, UNUSABLE, NOT_LISTED = "no route", "unusable route", "route not listed"
#: The dead-letter reason of a record whose route would have been a new table past --max-new-tables.
TOO_MANY_NEW = "too many new tables"
#: The dead-letter reason of a record whose route differs only in case from another table's.
COLLIDES = "route collides"
#: The dead-letter reason of a record whose route names a place this consumer did not make a
#: table in (another stream's table, a table or files of somebody else's, a table it cannot write).
NOT_OURS = "not this consumer's table"
#: The route of every record of a run without --route-by (RouteRule.single): never a table's name.
SINGLE = ""
#: The column of a new route's record kept as a dead letter until the driver decides on its table.
HELD_ROUTE = "held_route"
NOT_TEXT = object()  # a value there, but not text


def is_route(value: str) -> bool:
    """``value`` can name a table (the rule above)."""
    return _NAME.fullmatch(value) is not None


def check_template(output: str, route_by: str | None) -> None:
    """``--output`` holds ``{route}`` once exactly when ``--route-by`` is given."""
    count = output.count(ROUTE)
    if route_by and count != 1:
        raise IllegalArgumentError(
            f"--route-by {route_by}: --output must name each table with {ROUTE} once "
            f"(for example s3://lake/app/{ROUTE} or analytics.{ROUTE}), not {output!r}"
        )
    if not route_by and count:
        raise IllegalArgumentError(f"--output {output!r} holds {ROUTE}: say which field names the table (--route-by)")


def check_path(route_by: str) -> tuple[str, ...]:
    """The dotted path of ``--route-by`` as its field names."""
    names = tuple(route_by.split("."))
    if not route_by or any(not name for name in names):
        raise IllegalArgumentError(f"--route-by {route_by!r}: a field or a dotted path to one (metadata.table-name)")
    return names


def table_of(template: str, route: str) -> str:
    """The output of one route: the template with the value in it."""
    if not is_route(route):
        raise IllegalArgumentError(f"route {route!r} cannot name a table")
    return template.replace(ROUTE, route)


@dataclass(frozen=True)
class RouteRule:
    """``--route-by`` (its path), ``--routes`` (None: any value) and ``--max-new-tables``."""

    path: tuple[str, ...]
    allowed: frozenset[str] | None = None
    max_new: int = DEFAULT_MAX_NEW

    @classmethod
    def of(cls, route_by: str, routes: str = "", max_new: int = DEFAULT_MAX_NEW) -> RouteRule:
        """From the options as users write them; each mistake one line."""
        listed = frozenset(value.strip() for value in routes.split(",") if value.strip()) if routes else None
        bad = sorted(value for value in listed or () if not is_route(value))
        if bad:
            raise IllegalArgumentError(
                f"--routes: {bad[0]!r} cannot name a table (letters, digits, _ and -, at most {MAX_LENGTH}, "
                "not starting with _)"
            )
        NOT_NEGATIVE.check("--max-new-tables", max_new)
        return cls(check_path(route_by), listed, max_new)

    @classmethod
    def single(cls) -> RouteRule:
        """A run without ``--route-by``: one table, every record's route :data:`SINGLE`."""
        return cls(())

    @property
    def fixed(self) -> str | None:
        """The route every record takes whatever it holds (:meth:`single`'s), else None: each
        record's is read at :attr:`path`."""
        return None if self.path else SINGLE

    @property
    def spelled(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True)
class Routed:
    """A page's route values: ``values[i]`` of row i, None where ``reasons[i]`` says why not."""

    values: list[str | None]
    reasons: list[tuple[str, str] | None]  # (kind, detail)


def route_values(rows: pa.StructArray, rule: RouteRule) -> Routed:
    """Each row's route by ``rule``: its value at the path, or why it has none (missing, not
    text, breaking the naming rule, not in ``--routes``); the rule's fixed route if it has one."""
    if rule.fixed is not None:
        return Routed([rule.fixed] * len(rows), [None] * len(rows))
    column = _at(rows, rule.path)
    if column is not None and pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if column is None:
        return checked([None] * len(rows), rule)
    is_text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
    valid = column.is_valid().to_pylist()
    return checked(column.to_pylist() if is_text else [NOT_TEXT if v else None for v in valid], rule)


def value_at(body: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in a parsed JSON record (a source's change envelope), None if a
    level has no such field."""
    for name in path:
        if not isinstance(body, dict):
            return None
        body = body.get(name)
    return body


def checked(values: list[Any], rule: RouteRule) -> Routed:
    """Each value as a route, or why it is none (None: missing; not text; breaking the naming
    rule; not in ``--routes``)."""
    routes: list[str | None] = []
    reasons: list[tuple[str, str] | None] = []
    where = rule.spelled
    for value in values:
        if value is None or not isinstance(value, str):
            reason = (MISSING, f"{where} is {'missing' if value is None else 'not text'}")
        elif not is_route(value):
            shown = value if len(value) <= 40 else value[:40] + "..."
            rule_text = f"letters, digits, _ and - (at most {MAX_LENGTH}, no leading _)"
            reason = (UNUSABLE, f"{where} is {shown!r}: not {rule_text}")
        elif rule.allowed is not None and value not in rule.allowed:
            reason = (NOT_LISTED, f"{where} is {value!r}, not one of --routes")
        else:
            reason = None
        routes.append(value if reason is None else None)
        reasons.append(reason)
    return Routed(routes, reasons)


def _at(rows: pa.Array, path: tuple[str, ...]) -> pa.Array | None:
    """The child at ``path`` (nulls where a parent is null), or None if a level has no such field."""
    column = rows
    for name in path:
        if not pa.types.is_struct(column.type) or column.type.get_field_index(name) < 0:
            return None
        column = pc.struct_field(column, name)  # null where the struct itself is null
    return column


def new_tables(seen: Iterable[str], known: Iterable[str], max_new: int) -> frozenset[str]:
    """Of the routes a batch ``seen``, the new ones (not ``known``: tables made before) it makes:
    at most ``max_new``, by name, none that :func:`collisions` names. Deterministic: the same
    routes give the same tables."""
    colliding = collisions(seen, known)
    fresh = sorted(set(seen) - set(known) - set(colliding))
    return frozenset(fresh[:max_new])


def collisions(seen: Iterable[str], known: Iterable[str]) -> dict[str, str]:
    """The new routes of ``seen`` that would be the same table as another where names fold case
    (AWS Glue and Athena lower-case them, as do case-insensitive file systems), each with the
    route that keeps the name: a known table first, else the first new spelling by name. So
    ``Orders`` and ``orders`` never make two tables anywhere, nor share one."""
    owner = {route.casefold(): route for route in sorted(set(known), reverse=True)}
    found: dict[str, str] = {}
    for route in sorted(set(seen) - set(known)):
        first = owner.setdefault(route.casefold(), route)
        if first != route:
            found[route] = first
    return found


__all__ = [
    "COLLIDES",
    "DEFAULT_MAX_NEW",
    "HELD_ROUTE",
    "MAX_LENGTH",
    "MISSING",
    "NOT_LISTED",
    "NOT_OURS",
    "ROUTE",
    "SINGLE",
    "TOO_MANY_NEW",
    "UNUSABLE",
    "RouteRule",
    "Routed",
    "check_path",
    "check_template",
    "checked",
    "collisions",
    "is_route",
    "new_tables",
    "route_values",
    "table_of",
    "value_at",
]
