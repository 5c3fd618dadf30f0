"""How a stream's changes are applied: the mode and what it needs, checked when made (one line,
IllegalArgumentError, naming the option)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kinesis_batch.bounds import POSITIVE
from kinesis_batch.errors import IllegalArgumentError

#: ``upsert``: any decoded stream, keyed by --key; the others: a source's own envelope.
CHANGES = ("upsert", "dynamodb", "dms", "debezium")
ENVELOPES = ("dynamodb", "dms", "debezium")
NEEDS_KEY = ("upsert", "dms", "debezium")  # dynamodb's records name their key
TOMBSTONE_HOURS = 168.0
#: Between the ``--key`` entries of a setting (the command line's repeated flags joined).
KEY_SEPARATOR = ";"


@dataclass(frozen=True)
class ChangeSettings:
    """``mode``: one of CHANGES. ``key``: the key's columns (dynamodb: from the records' Keys
    unless given). ``sequence_by``: upsert's ordering field (None: Kinesis order).
    ``delete_when``: upsert's (field, value) that marks a delete. ``tombstone_hours``: how long
    a delete keeps older changes of its key out. ``route_keys``: a routed stream's
    (``--route-by``) key of each route's table that ``--key ROUTE:COL`` names; ``key`` serves the
    others (:meth:`for_route`)."""

    mode: str
    key: tuple[str, ...] = ()
    sequence_by: str | None = None
    delete_when: tuple[str, str] | None = None
    tombstone_hours: float = TOMBSTONE_HOURS
    route_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in CHANGES:
            raise IllegalArgumentError(f"--changes {self.mode!r}: choose one of {', '.join(CHANGES)}")
        if self.mode in NEEDS_KEY and not self.key and not self.route_keys:
            raise IllegalArgumentError(
                f"--changes {self.mode} needs --key COL[,COL]: the column(s) that name a row"
                + ("" if self.mode == "upsert" else f" ({self.mode} records do not carry the primary key)")
            )
        if self.mode != "upsert":
            given = [
                flag
                for flag, value in (("--sequence-by", self.sequence_by), ("--delete-when", self.delete_when))
                if value
            ]
            if given:
                raise IllegalArgumentError(
                    f"{', '.join(given)} go(es) with --changes upsert; "
                    f"{self.mode} records carry their own order and operation"
                )
        for key in (self.key, *self.route_keys.values()):
            if len(set(key)) != len(key):
                raise IllegalArgumentError(f"--key {','.join(key)} names a column twice")
        validate_tombstone_hours(self.tombstone_hours)

    def for_route(self, route: str) -> ChangeSettings | None:
        """The settings of one route's table: its own key, or the bare ``--key``; None when the
        mode needs a key and neither names one (that route's records are dead letters)."""
        key = self.route_keys.get(route, self.key)
        if not key and self.mode in NEEDS_KEY:
            return None
        return replace(self, key=key, route_keys={})

    @classmethod
    def parse(
        cls,
        mode: str,
        key: str = "",
        sequence_by: str = "",
        delete_when: str = "",
        tombstone_hours: float = TOMBSTONE_HOURS,
    ) -> ChangeSettings | None:
        """From the options' text; None when ``mode`` is empty (runs append), after refusing
        options that need it."""
        if not mode:
            given = [
                f for f, v in (("--key", key), ("--sequence-by", sequence_by), ("--delete-when", delete_when)) if v
            ]
            if given:
                raise IllegalArgumentError(f"{', '.join(given)} need(s) --changes (upsert, dynamodb, dms or debezium)")
            return None
        bare, by_route = parse_keys(key)
        return cls(mode, bare, sequence_by.strip() or None, parse_delete_when(delete_when), tombstone_hours, by_route)

    @property
    def envelope(self) -> bool:
        return self.mode in ENVELOPES

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "key": list(self.key),
            "sequence_by": self.sequence_by,
            "delete_when": list(self.delete_when) if self.delete_when else None,
            "tombstone_hours": self.tombstone_hours,
            **({"route_keys": {r: list(k) for r, k in sorted(self.route_keys.items())}} if self.route_keys else {}),
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> ChangeSettings:
        when = body.get("delete_when")
        return cls(
            body["mode"],
            tuple(body.get("key") or ()),
            body.get("sequence_by"),
            (str(when[0]), str(when[1])) if when else None,
            float(body.get("tombstone_hours", TOMBSTONE_HOURS)),
            {route: tuple(key) for route, key in (body.get("route_keys") or {}).items()},
        )


def parse_key(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",")) if text.strip() else ()
    if any(not name for name in names):
        raise IllegalArgumentError(f"--key {text!r}: give column names separated by commas")
    return names


def parse_keys(text: str) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """``--key`` as given, repeated flags joined by ``;`` (KEY_SEPARATOR): ``COL[,COL]`` (every
    table's key) and ``ROUTE:COL[,COL]`` (one routed table's), each at most once."""
    bare: tuple[str, ...] = ()
    by_route: dict[str, tuple[str, ...]] = {}
    for entry in (part.strip() for part in text.split(KEY_SEPARATOR)):
        if not entry:
            continue
        route, colon, names = entry.partition(":") if ":" in entry else ("", "", entry)
        route = route.strip()
        if colon and not route:
            raise IllegalArgumentError(f"--key {entry!r}: write ROUTE:COL[,COL] (orders:id) or COL[,COL]")
        taken = route in by_route if colon else bool(bare)
        if taken:
            raise IllegalArgumentError(f"--key {entry!r}: {route or 'the key of every table'} is given twice")
        if colon:
            by_route[route] = parse_key(names)
        else:
            bare = parse_key(names)
    return bare, by_route


def parse_delete_when(text: str) -> tuple[str, str] | None:
    """``FIELD=VALUE`` (``deleted=true``, ``op=d``): one field, one value, compared as text
    (case folded). Anything else is refused rather than read as a value no record has: ``==``,
    ``!=``, ``<``, a list (``a=1,b=2``, ``op=d,r``), spaces inside the field's name."""
    if not text.strip():
        return None
    name, equals, value = text.partition("=")
    name, value = name.strip(), value.strip()
    fix = "write FIELD=VALUE, one field and one value, for example deleted=true or op=d"
    if not equals or not name or not value:
        raise IllegalArgumentError(f"--delete-when {text!r}: {fix}")
    if value.startswith("=") or name.endswith(("!", "<", ">")):
        raise IllegalArgumentError(f"--delete-when {text!r}: one '=' only, it compares for equality; {fix}")
    odd = sorted({c for c in value if c in _NOT_IN_VALUE} | {c for c in name if c in _NOT_IN_NAME or c.isspace()})
    if odd:
        said = " ".join(repr(c) for c in odd)
        raise IllegalArgumentError(f"--delete-when {text!r}: {said} cannot be in it (no lists or operators); {fix}")
    return name, value


_NOT_IN_NAME = frozenset("=!<>,;|&()[]{}")
_NOT_IN_VALUE = frozenset("=,;|&")


def validate_tombstone_hours(hours: object) -> None:
    """A run's and maintenance's ``--tombstone-hours``: a positive number of hours."""
    if isinstance(hours, bool) or not isinstance(hours, int | float):
        raise IllegalArgumentError(f"--tombstone-hours: {hours!r} is not a number")
    POSITIVE.check("--tombstone-hours", hours)


def check_changes(changes: ChangeSettings | None, decode: str, transform: str) -> None:
    """The decoding settings a stream's changes need, each mistake one line (the formats that
    can merge are their rows' say: kinesis_batch.output.formats)."""
    if changes is None:
        return
    if changes.mode == "upsert" and decode == "raw":
        raise IllegalArgumentError("--changes upsert needs decoded records: --decode json, avro or protobuf")
    if changes.envelope and decode not in ("raw", "json"):
        raise IllegalArgumentError(f"--changes {changes.mode} reads JSON records: leave --decode out (or json)")
    if changes.envelope and transform:
        raise IllegalArgumentError(f"--changes {changes.mode} reads its own envelope: --transform does not apply")


__all__ = [
    "CHANGES",
    "ENVELOPES",
    "KEY_SEPARATOR",
    "NEEDS_KEY",
    "TOMBSTONE_HOURS",
    "ChangeSettings",
    "check_changes",
    "parse_delete_when",
    "parse_key",
    "parse_keys",
    "validate_tombstone_hours",
]
