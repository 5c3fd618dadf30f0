"""The routing stage (``--route-by``): after the transform, each row goes to the table its route
value names (kinesis_batch.routing.routes), and the rows of each table are fitted to that
table's own fields.

Contract: a record's rows all go to one table, so a record is rows of one table or one dead
letter, never in two tables. A record is a dead letter (stage ``route``) when a row of it has no
usable route (missing, not text, breaking the naming rule, not in ``--routes``), or when its
rows name two routes.
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

from kinesis_batch.decoding.rejects import ROUTE, Rejected
from kinesis_batch.routing.routes import Routed


def by_route(
    values: pa.StructArray, positions: list[int], routed: Routed, rejected: dict[int, Rejected]
) -> dict[str, tuple[pa.StructArray, list[int]]]:
    """The rows (``values``, one per entry of ``positions``: the record each came from) split by
    their ``routed`` values (kinesis_batch.routing.routes.route_values, or the envelope's),
    routes in name order; the records that cannot be routed are added to ``rejected`` (the
    first reason a record has is kept) and their rows left out."""
    routes_of: dict[int, set[str]] = defaultdict(set)
    for position, route, reason in zip(positions, routed.values, routed.reasons, strict=True):
        if reason is not None:
            rejected.setdefault(position, Rejected(position, ROUTE, *reason))
        else:
            routes_of[position].add(str(route))
    for position, routes in routes_of.items():
        if len(routes) > 1:
            detail = f"its rows name {len(routes)} routes ({', '.join(sorted(routes)[:3])}); a record goes to one table"
            rejected.setdefault(position, Rejected(position, ROUTE, "routes disagree", detail))
    rows: dict[str, list[int]] = defaultdict(list)
    for index, (position, route) in enumerate(zip(positions, routed.values, strict=True)):
        if route is not None and position not in rejected:
            rows[route].append(index)
    return {
        route: (values.take(pa.array(indexes, type=pa.int64())), [positions[i] for i in indexes])
        for route, indexes in sorted(rows.items())
    }


__all__ = ["by_route"]
