"""Where a Spark task's rows go, by route: each table's data place and file layout.

Routing is the general case (kinesis_batch.decoding.pipeline): a run without ``--route-by`` has
one known route, :data:`~kinesis_batch.routing.routes.SINGLE`, whose target is its output's
data place (:meth:`RouteTargets.single`). With ``--route-by``, where a route's rows go depends
on whether its table existed when the read began:
- a **known** route's files are written in its table's data place, laid out as that table is;
- a **new** route's files are written in the batch's staging (``routes/ROUTE/``), laid out as
  the run asks for new tables, because only the driver may decide, once every task is done,
  which new tables the batch makes (at most ``--max-new-tables``: kinesis_batch.run.route).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.routing.routes import SINGLE
from kinesis_batch.storage.layout import FileLayout
from kinesis_batch.storage.place import Place


@dataclass(frozen=True)
class Target:
    """Where one table's files go, and how they are laid out."""

    data: Place
    layout: FileLayout

    def to_json(self) -> dict[str, Any]:
        return {"data": self.data.to_json(), "files": self.layout.to_json()}

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Target:
        return cls(Place.from_json(body["data"]), FileLayout.from_json(body["files"]))


@dataclass(frozen=True)
class RouteTargets:
    """The known routes' tables, and the staging of new routes (``new.data`` is the batch's
    ``routes/`` folder, ``new.layout`` a new table's; None: the run makes no table)."""

    known: dict[str, Target] = field(default_factory=dict)
    new: Target | None = None

    @classmethod
    def single(cls, data: Place, layout: FileLayout) -> RouteTargets:
        """A run without ``--route-by``: its one table's data place."""
        return cls({SINGLE: Target(data, layout)})

    def to_json(self) -> dict[str, Any]:
        return {
            "new": self.new.to_json() if self.new else None,
            "known": {route: target.to_json() for route, target in sorted(self.known.items())},
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> RouteTargets:
        known = {route: Target.from_json(target) for route, target in body["known"].items()}
        return cls(known, Target.from_json(body["new"]) if body.get("new") else None)

    def places(self) -> list[Place]:
        """Every place a task may have written to: the known tables' data places, and each
        folder of the new routes' staging (a task's file is named relative to its folder)."""
        known = [target.data for _, target in sorted(self.known.items())]
        return known + ([self.new.data.child(f) for f in self.new.data.folders()] if self.new else [])

    def is_known(self, route: str) -> bool:
        return route in self.known

    def target(self, route: str) -> Target:
        """Where ``route``'s rows go: its table's data place, or its folder in the staging."""
        known = self.known.get(route)
        if known is not None:
            return known
        if self.new is None:
            raise InvalidStateError(f"route {route!r} has no table and this run makes none")
        return Target(self.new.data.child(route), self.new.layout)


__all__ = ["RouteTargets", "Target"]
