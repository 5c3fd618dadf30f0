"""What a shard's records became in one batch, when the run decodes: rows of the table, dead
letters, or filtered out by the transform. It travels with the batch's commit record and into
the checkpoint history, where the status views, the alerts and the UI read it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: How many dead-letter reasons a commit keeps (the most common, by ``stage: kind``).
KEPT_REASONS = 3
#: The changes count of records that are no change of a row (DMS control records, Debezium
#: tombstones): counted beside the changes, not among them.
SKIPPED = "skipped"


@dataclass(frozen=True)
class Landing:
    """``rows`` (a record may make several), ``dead_letters`` (records), ``filtered`` (records the
    transform made no row of), and the most common ``reasons`` of the dead letters with their
    counts. Records read = records with rows + dead letters + filtered. A stream of changes
    (``--changes``) adds what they did (``changes``: inserted, updated, deleted, expired, ignored,
    duplicates, superseded, skipped) and the ``key`` they were applied by. A routed stream
    (``--route-by``) adds the rows of each table (``tables``, by route) and, with changes, each
    table's key (``keys``) and what its changes did (``table_changes``), by route; its
    ``changes`` are then only what the tasks counted before routing (``skipped``), so that
    :attr:`all_changes` counts each change once."""

    rows: int = 0
    dead_letters: int = 0
    filtered: int = 0
    reasons: Mapping[str, int] = field(default_factory=dict)
    changes: Mapping[str, int] = field(default_factory=dict)
    key: tuple[str, ...] = ()
    tables: Mapping[str, int] = field(default_factory=dict)
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    table_changes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, counts: Mapping[str, Any]) -> Landing:
        """From a range's counts (kinesis_batch.decoding.pipeline.Counts as JSON)."""
        reasons = sorted(dict(counts.get("reasons") or {}).items(), key=lambda item: (-int(item[1]), item[0]))
        return cls(
            rows=int(counts.get("rows", 0)),
            dead_letters=int(counts.get("dead_letters", 0)),
            filtered=int(counts.get("filtered", 0)),
            reasons={reason: int(count) for reason, count in reasons[:KEPT_REASONS]},
            changes={kind: int(count) for kind, count in sorted(dict(counts.get("changes") or {}).items())},
            key=tuple(counts.get("key") or ()),
            tables={route: int(rows) for route, rows in sorted(dict(counts.get("tables") or {}).items())},
            keys={route: tuple(key) for route, key in sorted(dict(counts.get("keys") or {}).items())},
            table_changes={
                route: {kind: int(n) for kind, n in sorted(dict(kinds).items())}
                for route, kinds in sorted(dict(counts.get("table_changes") or {}).items())
            },
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "dead_letters": self.dead_letters,
            "filtered": self.filtered,
            "reasons": dict(self.reasons),
            **({"changes": dict(self.changes)} if self.changes else {}),
            **({"key": list(self.key)} if self.key else {}),
            **({"tables": dict(self.tables)} if self.tables else {}),
            **({"keys": {route: list(key) for route, key in self.keys.items()}} if self.keys else {}),
            **({"table_changes": {r: dict(c) for r, c in self.table_changes.items()}} if self.table_changes else {}),
        }

    @property
    def all_changes(self) -> dict[str, int]:
        """What the changes did in all: the tasks' own counts (routed: before routing) and each
        routed table's, added up; the kinds that happened."""
        summed = Counter(self.changes)
        for kinds in self.table_changes.values():
            summed.update(kinds)
        return {kind: count for kind, count in sorted(summed.items()) if count}

    def said(self) -> str:
        """``12 rows, 3 dead letters`` (routed: ``in 2 tables: a 5, b 7``), for a line; a stream
        of changes says its changes and what they did instead of rows (``12 changes (5
        inserted, 2 updated, 5 superseded)``), since a change is not a row of the table."""
        tables = ", ".join(f"{route} {rows}" for route, rows in self.tables.items())
        where = f" in {len(self.tables)} tables: {tables}" if tables else ""
        done = self.all_changes
        if done or self.key or self.keys:
            count = sum(n for kind, n in done.items() if kind != SKIPPED)
            what = ", ".join(f"{n} {kind}" for kind, n in done.items()) or "none"
            head = f"{count} changes ({what}){where}"
        else:
            head = f"{self.rows} rows{where}"
        return f"{head}{';' if where else ','} {self.dead_letters} dead letters"

    @classmethod
    def from_json(cls, body: Mapping[str, Any] | None) -> Landing | None:
        return None if not body else cls.of(body)

    def __add__(self, other: Landing) -> Landing:
        reasons = dict(self.reasons)
        for reason, count in other.reasons.items():
            reasons[reason] = reasons.get(reason, 0) + count
        changes = dict(self.changes)
        for kind, count in other.changes.items():
            changes[kind] = changes.get(kind, 0) + count
        tables = dict(self.tables)
        for route, rows in other.tables.items():
            tables[route] = tables.get(route, 0) + rows
        table_changes = {route: dict(kinds) for route, kinds in self.table_changes.items()}
        for route, kinds in other.table_changes.items():
            mine = table_changes.setdefault(route, {})
            for kind, count in kinds.items():
                mine[kind] = mine.get(kind, 0) + count
        return Landing(
            self.rows + other.rows,
            self.dead_letters + other.dead_letters,
            self.filtered + other.filtered,
            reasons,
            dict(sorted(changes.items())),
            self.key or other.key,
            dict(sorted(tables.items())),
            dict(sorted({**other.keys, **self.keys}.items())),
            {route: dict(sorted(kinds.items())) for route, kinds in sorted(table_changes.items())},
        )


def json_fields(landing: Landing | None) -> dict[str, Any]:
    """``rows``, ``dead_letters``, ``filtered`` and ``reasons`` to merge into a JSON object that
    describes a batch, run or shard; nothing for raw rows (``None``)."""
    return landing.to_json() if landing else {}


def total(landings: list[Landing | None]) -> Landing | None:
    """The landings of several shards together (None when none of them decoded)."""
    known = [landing for landing in landings if landing is not None]
    if not known:
        return None
    result = Landing()
    for landing in known:
        result = result + landing
    return result


__all__ = ["KEPT_REASONS", "SKIPPED", "Landing", "json_fields", "total"]
