"""What one range's records became, counted as its pages go (the read step's results carry it,
and each shard's commit its landing: kinesis_batch.landing)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Counts:
    """What one range's records became: ``records`` = records of rows + ``dead_letters`` +
    ``filtered``; ``rows`` counts the rows; ``reasons``: dead letters by ``stage: kind``;
    ``tables``: routed, the rows of each route, ``table_records`` the records they came from, and
    (with ``--changes``) ``keys``, the key each route's rows were collapsed by, and
    ``table_changes``, what that collapsing dropped."""

    records: int = 0
    rows: int = 0
    dead_letters: int = 0
    filtered: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    changes: Counter[str] = field(default_factory=Counter)  # --changes: skipped, collapsed (kinesis_batch.changes)
    key: tuple[str, ...] = ()  # --changes: the key the rows were collapsed by
    tables: Counter[str] = field(default_factory=Counter)
    table_records: Counter[str] = field(default_factory=Counter)
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)  # routed --changes: each route's key
    table_changes: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def to_json(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "rows": self.rows,
            "dead_letters": self.dead_letters,
            "filtered": self.filtered,
            "reasons": dict(self.reasons.most_common()),
            **({"changes": dict(sorted(self.changes.items()))} if self.changes else {}),
            **({"key": list(self.key)} if self.key else {}),
            **({"tables": dict(sorted(self.tables.items()))} if self.tables else {}),
            **({"table_records": dict(sorted(self.table_records.items()))} if self.table_records else {}),
            **({"keys": {route: list(key) for route, key in sorted(self.keys.items())}} if self.keys else {}),
            **(
                {"table_changes": {r: dict(sorted(c.items())) for r, c in sorted(self.table_changes.items())}}
                if self.table_changes
                else {}
            ),
        }


__all__ = ["Counts"]
