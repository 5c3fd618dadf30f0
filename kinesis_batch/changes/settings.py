"""How a stream's changes are applied: the mode and what it needs, checked when made (one line,
IllegalArgumentError, naming the option)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kinesis_batch.errors import IllegalArgumentError

#: ``upsert``: any decoded stream, keyed by --key; the others: a source's own envelope.
CHANGES = ("upsert", "dynamodb", "dms", "debezium")
ENVELOPES = ("dynamodb", "dms", "debezium")
TOMBSTONE_HOURS = 168.0


@dataclass(frozen=True)
class ChangeSettings:
    """``mode``: one of CHANGES. ``key``: the key's columns (dynamodb: from the records' Keys
    unless given). ``sequence_by``: upsert's ordering field (None: Kinesis order).
    ``delete_when``: upsert's (field, value) that marks a delete. ``tombstone_hours``: how long
    a delete keeps older changes of its key out."""

    mode: str
    key: tuple[str, ...] = ()
    sequence_by: str | None = None
    delete_when: tuple[str, str] | None = None
    tombstone_hours: float = TOMBSTONE_HOURS

    def __post_init__(self) -> None:
        if self.mode not in CHANGES:
            raise IllegalArgumentError(f"--changes {self.mode!r}: choose one of {', '.join(CHANGES)}")
        if self.mode in ("upsert", "dms", "debezium") and not self.key:
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
        if len(set(self.key)) != len(self.key):
            raise IllegalArgumentError(f"--key {','.join(self.key)} names a column twice")
        validate_tombstone_hours(self.tombstone_hours)

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
        return cls(mode, parse_key(key), sequence_by.strip() or None, parse_delete_when(delete_when), tombstone_hours)

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
        )


def parse_key(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",")) if text.strip() else ()
    if any(not name for name in names):
        raise IllegalArgumentError(f"--key {text!r}: give column names separated by commas")
    return names


def parse_delete_when(text: str) -> tuple[str, str] | None:
    """``FIELD=VALUE`` (``deleted=true``, ``op=d``)."""
    if not text.strip():
        return None
    name, equals, value = text.partition("=")
    if not equals or not name.strip() or not value.strip():
        raise IllegalArgumentError(f"--delete-when {text!r}: write FIELD=VALUE, for example deleted=true or op=d")
    return name.strip(), value.strip()


def validate_tombstone_hours(hours: object) -> None:
    """A run's and maintenance's ``--tombstone-hours``: a positive number of hours."""
    if isinstance(hours, bool) or not isinstance(hours, int | float) or not hours > 0:
        raise IllegalArgumentError(f"--tombstone-hours: {hours!r} is not a positive number of hours")


def check_changes(changes: ChangeSettings | None, format: str, decode: str, transform: str) -> None:
    """The output format and decoding settings a stream's changes need, each mistake one line."""
    if changes is None:
        return
    if format == "parquet":
        raise IllegalArgumentError(
            f"--changes {changes.mode} needs --format delta or iceberg: parquet folders cannot be updated atomically"
        )
    if changes.mode == "upsert" and decode == "raw":
        raise IllegalArgumentError("--changes upsert needs decoded records: --decode json, avro or protobuf")
    if changes.envelope and decode not in ("raw", "json"):
        raise IllegalArgumentError(f"--changes {changes.mode} reads JSON records: leave --decode out (or json)")
    if changes.envelope and transform:
        raise IllegalArgumentError(f"--changes {changes.mode} reads its own envelope: --transform does not apply")


__all__ = [
    "CHANGES",
    "ENVELOPES",
    "TOMBSTONE_HOURS",
    "ChangeSettings",
    "check_changes",
    "parse_delete_when",
    "parse_key",
    "validate_tombstone_hours",
]
