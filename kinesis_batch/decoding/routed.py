"""A routed range's pipeline (``--route-by``): the records of a page decoded, transformed and
routed, then each route's rows fitted to that table's own fields (kinesis_batch.decoding.route_stage).

Kinds of records in one stream often share field names with different types (DMS: ``data.id``
a number in one table and text in another). A page decodes with one type per field, so the
records that conflict with the first ones are decoded again on their own, in waves: a record
is a dead letter for its type only when it conflicts within its own table (the route's
fields), or after :data:`WAVES` waves.

With ``--changes``, each route's rows then go through that route's changes stage, keyed by its
own key (``--key ROUTE:COL``, or the bare ``--key``; a DynamoDB table's own ``Keys``), and are
collapsed per key; a source's envelope (``--changes dms``) holds the route (``metadata.table-name``).

Contract (beside :class:`~kinesis_batch.decoding.pipeline.Pipeline`'s): a page's rows are in
:attr:`Page.routes`, each route's as one batch per wave (a later wave's may have grown the
table's fields), :attr:`Counts.tables` counts each route's rows (before collapsing) and
:attr:`Counts.keys` each route's key.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pyarrow as pa

from kinesis_batch.changes.model import Unwrapped
from kinesis_batch.changes.stage import CHANGES, ChangeStage, Marked
from kinesis_batch.decoding.conform import Conformed
from kinesis_batch.decoding.pipeline import Page, Pipeline
from kinesis_batch.decoding.registry import Registry
from kinesis_batch.decoding.rejects import ROUTE, TYPE_CHANGED, Rejected, note
from kinesis_batch.decoding.route_stage import by_route
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.routing.routes import HELD_ROUTE, TOO_MANY_NEW, Routed, checked, route_values
from kinesis_batch.shards.model import Record

WAVES = 8  # a page of records of more kinds than this, each clashing with the others', is unusual
_Part = tuple[Conformed, list[int], Marked | None]  # a wave's rows of a route, their records, their marks


class RoutedPipeline(Pipeline):
    def __init__(
        self, spec: DecodeSpec, *, shard_id: str, depth: int, batch_id: str | None, registry: Registry | None = None
    ) -> None:
        assert spec.routing is not None, "a routed pipeline needs --route-by"
        super().__init__(spec, shard_id=shard_id, depth=depth, batch_id=batch_id, registry=registry)
        self.routing = spec.routing
        self.route_fields: dict[str, pa.Schema] = {**spec.declared_by_route, **spec.tables}
        self.known = frozenset(spec.tables)
        self.stages: dict[str, ChangeStage | None] = {}  # --changes: each route's (None: it has no key)
        if self.envelope is not None:  # a source's changes: the route is in the envelope
            self.envelope.route_by = self.routing.path

    def page(self, records: Sequence[Record]) -> Page:
        inflated_rejects: dict[int, Rejected] = {}
        inflated = self._inflated(records, inflated_rejects)
        alive = [position for position, payload in enumerate(inflated) if payload is not None]
        fields = dict(self.route_fields)

        def attempt(todo: list[int], rejected: dict[int, Rejected]) -> dict[str, list[_Part]]:
            self.route_fields = dict(fields)  # as the page found them: a refused record widened none
            return self._routed(records, inflated, todo, rejected)

        fitted, rejected = self._without_refused(
            alive, inflated_rejects, attempt, lambda _: self.route_fields != fields
        )
        self._check(records, rejected)
        tables: dict[str, list[pa.RecordBatch]] = {}
        landed: list[int] = []
        held: dict[int, str] = {}
        for route, parts in fitted.items():
            for conformed, kept, marked in parts:
                batch = self._rows(records, kept, conformed.columns, conformed.schema)
                if batch is None:
                    continue
                self.counts.tables[route] += batch.num_rows
                self.counts.table_records[route] += len(set(kept))
                if marked is not None:
                    stage = self.stages[route]
                    assert stage is not None
                    batch, dropped = self._folded(batch, marked, stage)
                    self.counts.keys[route] = stage.key
                    self.counts.table_changes[route].update(dropped)
                tables.setdefault(route, []).append(batch)
                landed += kept
                held |= {position: route for position in kept if route not in self.known}
        self._count(len(records), landed, rejected)
        return Page(None, self._dead(records, rejected), tables, self._held(records, held))

    def _routed(
        self,
        records: Sequence[Record],
        inflated: Sequence[bytes | None],
        todo: list[int],
        rejected: dict[int, Rejected],
    ) -> dict[str, list[_Part]]:
        """The records at ``todo`` decoded in waves (the records that clash with a wave's types
        go again), each route's rows fitted to its fields and through its changes stage."""
        pieces: dict[str, list[tuple[pa.StructArray, list[int]]]] = defaultdict(list)
        envelopes: dict[int, Unwrapped] = {}  # --changes dms|debezium|dynamodb: every wave's
        for wave in range(WAVES):
            clashed: dict[int, Rejected] = {}
            values, positions = self._decoded(records, inflated, todo, clashed)
            todo = sorted(position for position, reject in clashed.items() if reject.kind == TYPE_CHANGED)
            last = not todo or not positions or wave == WAVES - 1  # else the clashing records go again
            note(rejected, [reject for reject in clashed.values() if reject.kind != TYPE_CHANGED or last])
            for route, rows in by_route(values, positions, self._routes(values, positions), rejected).items():
                pieces[route].append(rows)
            if self.envelope is not None:
                envelopes |= self.envelope.envelopes
            if last:
                break
        return {
            route: self._route_changes(route, self._fitted_pieces(route, found, rejected), rejected, envelopes)
            for route, found in sorted(pieces.items())
        }

    def _routes(self, values: pa.StructArray, positions: list[int]) -> Routed:
        """The rows' route values: at the path in the decoded rows, or (a source's changes) in
        each record's envelope."""
        if self.envelope is None:
            return route_values(values, self.routing)
        return checked([self.envelope.routes.get(position) for position in positions], self.routing)

    def _route_changes(
        self,
        route: str,
        parts: list[tuple[Conformed, list[int]]],
        rejected: dict[int, Rejected],
        envelopes: dict[int, Unwrapped],
    ) -> list[_Part]:
        """``--changes``: each part of a route's rows through that route's changes stage, narrowed
        to the rows that are changes, with their marks (without ``--changes``: as they are, no
        mark). A route no ``--key`` names a key for is dead letters: its parts keep no row."""
        if self.changes is None:
            return [(conformed, kept, None) for conformed, kept in parts]
        if route not in self.stages:
            settings = self.changes.settings.for_route(route)
            self.stages[route] = ChangeStage(settings) if settings is not None else None
        stage = self.stages[route]
        if stage is None:
            detail = f"--key names no key for table {route} (give --key {route}:COL or a bare --key)"
            note(rejected, [Rejected(p, CHANGES, "no key", detail) for _, kept in parts for p in kept])
            return [(conformed, [], None) for conformed, _ in parts]
        given = envelopes if self.envelope is not None else None  # None: --changes upsert
        return [self._changes(conformed, kept, rejected, stage, given) for conformed, kept in parts]

    def _held(self, records: Sequence[Record], routes: dict[int, str]) -> pa.RecordBatch | None:
        """New routes' records as the dead letters they become if their tables are refused."""
        if not routes:
            return None
        limit = self.routing.max_new
        refused = {
            p: Rejected(p, ROUTE, TOO_MANY_NEW, f"{route} would be a table past --max-new-tables {limit}")
            for p, route in routes.items()
        }
        dead = self._dead(records, refused)
        assert dead is not None
        return dead.append_column(HELD_ROUTE, pa.array([routes[p] for p in sorted(routes)], pa.string()))

    def _fitted_pieces(
        self, route: str, pieces: list[tuple[pa.StructArray, list[int]]], rejected: dict[int, Rejected]
    ) -> list[tuple[Conformed, list[int]]]:
        """Each wave's rows of ``route`` fitted to its fields, which grow wave by wave."""
        fitted = []
        for values, positions in pieces:
            fields = self.route_fields.get(route, self.fields)
            conformed, kept = self._fitted(values, positions, rejected, fields)
            self.route_fields[route] = conformed.schema
            fitted.append((conformed, kept))
        return fitted


__all__ = ["WAVES", "RoutedPipeline"]
