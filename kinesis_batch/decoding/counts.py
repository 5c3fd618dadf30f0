"""What one range's records became, counted as its pages go (the read step's results carry it,
and each shard's commit its landing: kinesis_batch.landing)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kinesis_batch.routing.routes import SINGLE


@dataclass
class Counts:
    """What one range's records became: ``records`` = records of rows + ``dead_letters`` +
    ``filtered``; ``rows`` counts the rows; ``reasons``: dead letters by ``stage: kind``;
    ``changes``: what a source's envelope skipped, before routing. By route:
    ``tables`` the rows of each, ``table_records`` the records they came from, and (with
    ``--changes``) ``keys``, the key each route's rows were collapsed by, and ``table_changes``,
    what that collapsing dropped. A run without ``--route-by`` has one route, :data:`SINGLE`,
    which names no table: its figures are the totals, its key ``key``, and what its collapsing
    dropped is in its JSON's ``changes``, beside what was skipped. Each drop is counted once, in
    one place: :attr:`kinesis_batch.landing.Landing.all_changes` adds them up."""

    records: int = 0
    rows: int = 0
    dead_letters: int = 0
    filtered: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    changes: Counter[str] = field(default_factory=Counter)  # --changes: skipped (kinesis_batch.changes)
    tables: Counter[str] = field(default_factory=Counter)
    table_records: Counter[str] = field(default_factory=Counter)
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    table_changes: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    @property
    def key(self) -> tuple[str, ...]:
        """--changes without --route-by: the key the rows were collapsed by."""
        return self.keys.get(SINGLE, ())

    def landed(self, route: str, rows: int, records: int) -> None:
        """``rows`` of ``records`` went to ``route``'s table (before collapsing)."""
        self.tables[route] += rows
        self.table_records[route] += records

    def folded(self, route: str, key: tuple[str, ...], dropped: Mapping[str, int]) -> None:
        """``route``'s rows were collapsed by ``key``, which dropped ``dropped``."""
        self.keys[route] = key
        self.table_changes[route].update(dropped)

    def to_json(self) -> dict[str, Any]:
        tables = {route: rows for route, rows in sorted(self.tables.items()) if route != SINGLE}
        records = {route: n for route, n in sorted(self.table_records.items()) if route != SINGLE}
        keys = {route: list(key) for route, key in sorted(self.keys.items()) if route != SINGLE}
        changes = {r: dict(sorted(c.items())) for r, c in sorted(self.table_changes.items()) if r != SINGLE}
        done = self.changes + self.table_changes.get(SINGLE, Counter())
        return {
            "records": self.records,
            "rows": self.rows,
            "dead_letters": self.dead_letters,
            "filtered": self.filtered,
            "reasons": dict(self.reasons.most_common()),
            **({"changes": dict(sorted(done.items()))} if done else {}),
            **({"key": list(self.key)} if self.key else {}),
            **({"tables": tables} if tables else {}),
            **({"table_records": records} if records else {}),
            **({"keys": keys} if keys else {}),
            **({"table_changes": changes} if changes else {}),
        }


__all__ = ["Counts"]
