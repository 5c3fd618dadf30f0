"""One shard range's pipeline: each page of records through decompress, decode, transform, route
and conform, into each table's rows and dead-letter rows.

Routing is the general case: a run without ``--route-by`` is :meth:`RouteRule.single`, one route
(:data:`SINGLE`) that every record takes without it being read. With ``--route-by``, each row goes
to the table its route value names (kinesis_batch.decoding.route_stage), and each route's records
are decoded on their own, so one table's fractions never type another's integers, nor a record
fail for disagreeing with another table's: a record is a dead letter for its types only when it
disagrees with its own table or the other records of it. Kinds of records often share field names
with different types (DMS: ``data.id`` a number in one table and text in another), so the records
that clash with the page's types are read again on their own to find their routes, in waves
(:data:`WAVES` at most). With ``--changes``, each route's rows go through that route's changes
stage, keyed by its own key (``--key ROUTE:COL``, or the bare ``--key``; a DynamoDB table's own
``Keys``), and are collapsed per key; a source's envelope (``--changes dms``) holds the route
(``metadata.table-name``).

Contract:
- Every record of a page ends as rows of one route (``record_index`` 0, 1, ... numbering a
  record's rows), as exactly one dead-letter row, or, if the transform made no row of it, as
  ``filtered``: counted, never lost. A record one of whose rows does not fit its table is a dead
  letter whole.
- Each route's rows' schema is its table's as this range knows it: the fields the read step found,
  plus what the range added since (new fields, widened columns). It only grows, so a writer that
  sees it change starts a new file.
- A new route's records (no table yet) are also in :attr:`Page.held`, as the dead letters they
  become if the driver refuses their table.
- Deterministic: the same records give the same rows and dead letters.
- With ``--on-bad-record fail`` the first record that would be a dead letter raises
  BadRecordError instead.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import pyarrow as pa

from kinesis_batch.changes.fold import newest
from kinesis_batch.changes.model import Unwrapped
from kinesis_batch.changes.stage import CHANGES, ChangeStage, Marked
from kinesis_batch.columns import (
    BATCH_ID,
    CHANGE_OP,
    CHANGE_POSITION,
    DEAD_LETTER_SCHEMA,
    METADATA,
    RESERVED,
    TRANSFORM_INPUT,
    record_columns,
)
from kinesis_batch.decoding import transform as transforms
from kinesis_batch.decoding.conform import Conformed, conform
from kinesis_batch.decoding.counts import Counts
from kinesis_batch.decoding.decoded import Decoder
from kinesis_batch.decoding.decoders import decoder_for
from kinesis_batch.decoding.decompress import decompress
from kinesis_batch.decoding.formats.envelope import EnvelopeDecoder
from kinesis_batch.decoding.registry import Registry
from kinesis_batch.decoding.rejects import ROUTE, SCHEMA, TRANSFORM, Rejected, bad_record, note, tally
from kinesis_batch.decoding.route_stage import by_route
from kinesis_batch.decoding.scalars import Policy
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.landing import SKIPPED
from kinesis_batch.routing.routes import HELD_ROUTE, SINGLE, TOO_MANY_NEW, Routed, RouteRule, checked, route_values
from kinesis_batch.shards.model import Record

T = TypeVar("T")
RESERVED_NAME = "reserved name"
WAVES = 8  # a page of records of more kinds than this, each clashing with the others', is unusual
_Part = tuple[Conformed, list[int], Marked | None]  # a route's rows, their records, their marks
_Values = tuple[pa.StructArray, list[int]]  # decoded rows and the record each came from


@dataclass(frozen=True)
class Page:
    """A page's rows by route (one batch each), its dead letters, and ``held``: the records of new
    routes as dead letters, kept until the driver decides on their tables."""

    routes: dict[str, pa.RecordBatch]
    dead: pa.RecordBatch | None
    held: pa.RecordBatch | None = None

    @property
    def rows(self) -> pa.RecordBatch | None:
        """The rows of a run without ``--route-by`` (its one route, :data:`SINGLE`)."""
        return self.routes.get(SINGLE)


class Pipeline:
    def __init__(
        self, spec: DecodeSpec, *, shard_id: str, depth: int, batch_id: str | None, registry: Registry | None = None
    ) -> None:
        settings = spec.settings
        self.shard_id, self.depth, self.batch_id = shard_id, depth, batch_id
        self.routing = spec.routing or RouteRule.single()
        self.fields = spec.starting_fields()  # a route's table's fields until it has its own
        self.route_fields: dict[str, pa.Schema] = {**spec.declared_by_route, **spec.tables}
        self.known = frozenset({*spec.tables, SINGLE})  # the routes whose tables exist
        self.changes = spec.changes
        self.stages: dict[str, ChangeStage | None] = {}  # --changes: each route's (None: it has no key)
        self.envelope = (
            EnvelopeDecoder(spec.changes.mode, self.fields, self.routing.path)
            if spec.changes and spec.changes.envelope
            else None
        )
        self.decoder: Decoder = self.envelope or decoder_for(spec, registry)
        self.transform = transforms.load(settings.transform) if settings.transform else None
        self.decompress = settings.decompress
        self.fail = settings.on_bad_record == "fail"
        self.policy = Policy(
            add_columns=settings.schema_evolution == "add-columns",
            widen=spec.widen,
            exact=settings.decode in ("avro", "protobuf"),
        )
        self.counts = Counts()

    def fields_of(self, route: str) -> pa.Schema:
        """The fields of ``route``'s table as this range knows them."""
        return self.route_fields.get(route, self.fields)

    def page(self, records: Sequence[Record]) -> Page:
        inflated_rejects: dict[int, Rejected] = {}
        inflated = self._inflated(records, inflated_rejects)
        alive = [position for position, payload in enumerate(inflated) if payload is not None]
        fields = dict(self.route_fields)

        def attempt(todo: list[int], rejected: dict[int, Rejected]) -> dict[str, _Part]:
            self.route_fields = dict(fields)  # as the page found them: a refused record widened none
            return self._routed(records, inflated, todo, rejected)

        parts, rejected = self._without_refused(alive, inflated_rejects, attempt, lambda _: self.route_fields != fields)
        self._check(records, rejected)
        routes: dict[str, pa.RecordBatch] = {}
        landed: list[int] = []
        held: dict[int, str] = {}
        for route, (conformed, kept, marked) in parts.items():
            batch = self._rows(records, kept, conformed.columns, conformed.schema)
            if batch is None:
                continue
            self.counts.landed(route, batch.num_rows, len(set(kept)))
            if marked is not None:
                stage = self.stages[route]
                assert stage is not None
                batch = self._folded(route, batch, marked, stage)
            routes[route] = batch
            landed += kept
            held |= {position: route for position in kept if route not in self.known}
        self._count(len(records), landed, rejected)
        return Page(routes, self._dead(records, rejected), self._held(records, held))

    def _routed(
        self,
        records: Sequence[Record],
        inflated: Sequence[bytes | None],
        todo: list[int],
        rejected: dict[int, Rejected],
    ) -> dict[str, _Part]:
        """The records at ``todo`` by route, each route's decoded on their own, fitted to its
        table's fields and through its changes stage."""
        split, decoded, envelopes = self._split(records, inflated, todo, rejected)
        parts: dict[str, _Part] = {}
        for route, positions in sorted(split.items()):
            values = decoded.get(route)
            if values is None:  # decoded with other routes' records: again, on their own
                self.decoder.learn(self.fields_of(route) if self.transform is None else self.fields)
                values = self._decoded(records, inflated, positions, rejected)
                if self.envelope is not None:
                    envelopes |= self.envelope.envelopes
            fitted, kept = self._fitted(*values, rejected, self.fields_of(route))
            self.route_fields[route] = fitted.schema
            parts[route] = self._route_changes(route, fitted, kept, rejected, envelopes)
        return parts

    def _split(
        self,
        records: Sequence[Record],
        inflated: Sequence[bytes | None],
        todo: list[int],
        rejected: dict[int, Rejected],
    ) -> tuple[dict[str, list[int]], dict[str, _Values], dict[int, Unwrapped]]:
        """Which route each record at ``todo`` takes, and the routes whose rows were decoded
        alone already. A fixed route's records are decoded once, by route. With ``--route-by`` the
        records are decoded in waves (those a wave rejects go again) to read their routes; the
        records that cannot be routed are rejected. With a source's envelope, each record's
        envelope (``--changes dms|debezium|dynamodb``) too."""
        fixed = self.routing.fixed
        if fixed is not None:
            return {fixed: todo} if todo else {}, {}, {}
        self.decoder.learn(self.fields)
        split: dict[str, list[int]] = defaultdict(list)
        found: dict[str, list[_Values]] = defaultdict(list)
        envelopes: dict[int, Unwrapped] = {}
        rescued: dict[int, str] = {}
        waves = 0
        while todo and waves < WAVES:
            waves += 1
            clashed: dict[int, Rejected] = {}
            values, positions = _without(*self._decoded(records, inflated, todo, clashed), clashed)
            # A record rejected beside others may only disagree with their types (a fraction
            # beside 2**53 + 1, text beside a number): it goes again, with the others rejected,
            # until a wave routes none of them; those are rejected for what they are.
            last = not positions or waves == WAVES
            todo = [] if last else sorted(clashed)
            if last:
                rescued = self._named(inflated, clashed)
                note(rejected, [reject for position, reject in clashed.items() if position not in rescued])
                for position, route in rescued.items():
                    split[route].append(position)
            for route, rows in by_route(values, positions, self._routes(values, positions), rejected).items():
                split[route] += sorted(set(rows[1]))
                found[route].append(rows)
            if self.envelope is not None:
                envelopes |= self.envelope.envelopes
            if last:
                break
        # One wave of one route was decoded alone already (with no record rescued into it). Not
        # by comparing positions: a record of several rows is at one position several times.
        alone = {route: rows[0] for route, rows in found.items() if waves == 1 and len(found) == 1 and not rescued}
        return {route: sorted(set(positions)) for route, positions in split.items()}, alone, envelopes

    def _named(self, inflated: Sequence[bytes | None], clashed: dict[int, Rejected]) -> dict[int, str]:
        """Of the records the waves rejected, those whose payloads name one route as written
        (kinesis_batch.decoding.decoded.Decoder.written_routes), each with its route: typed by
        the page's fields, not their table's, they may still be rows of it, so they are decoded
        again with that table's records. Not with a transform, which the route is read after
        (and which types nothing by the table)."""
        if self.transform is not None or not clashed:
            return {}
        positions = sorted(clashed)
        written = self.decoder.written_routes([inflated[p] for p in positions], self.routing.path)  # type: ignore[misc]
        named: dict[int, str] = {}
        for position, values in zip(positions, written, strict=True):
            routed = checked(values, self.routing) if values else None
            if routed is not None and not any(routed.reasons) and len(set(routed.values)) == 1:
                named[position] = str(routed.values[0])
        return named

    def _routes(self, values: pa.StructArray, positions: list[int]) -> Routed:
        """The rows' route values: at the path in the decoded rows, or (a source's changes) in
        each record's envelope."""
        if self.envelope is None:
            return route_values(values, self.routing)
        return checked([self.envelope.routes.get(position) for position in positions], self.routing)

    def _route_changes(
        self,
        route: str,
        fitted: Conformed,
        kept: list[int],
        rejected: dict[int, Rejected],
        envelopes: dict[int, Unwrapped],
    ) -> _Part:
        """``--changes``: a route's rows through that route's changes stage, narrowed to the rows
        that are changes, with their marks (without ``--changes``: as they are, no mark). A route
        no ``--key`` names a key for is dead letters: it keeps no row."""
        if self.changes is None:
            return fitted, kept, None
        if route not in self.stages:
            settings = self.changes.for_route(route)
            self.stages[route] = ChangeStage(settings) if settings is not None else None
        stage = self.stages[route]
        if stage is None:
            detail = f"--key names no key for table {route} (give --key {route}:COL or a bare --key)"
            note(rejected, [Rejected(p, CHANGES, "no key", detail) for p in kept])
            return fitted, [], None
        given = envelopes if self.envelope is not None else None  # None: --changes upsert
        return self._changes(fitted, kept, rejected, stage, given)

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

    def _without_refused(
        self,
        alive: list[int],
        rejects: dict[int, Rejected],
        attempt: Callable[[list[int], dict[int, Rejected]], T],
        typed: Callable[[T], bool],
    ) -> tuple[T, dict[int, Rejected]]:
        """``attempt`` (decode, conform, the changes stage) on the records at ``alive``, and the
        page's rejections (``rejects`` and its own); again without the records refused for what
        they are, until no new one is. A refused record (no key, a --sequence-by that orders
        nothing, a field named like a column of ours) has typed the page's columns like any other:
        decoded again without it, the good records are not dead letters for disagreeing with it,
        nor do its fields add columns. Only a page that could have been shaped goes again: one
        with a record rejected for its types, or whose attempt ``typed`` a column (added or
        changed one)."""
        refused: dict[int, Rejected] = {}
        skipped = Counter(self.envelope.skipped) if self.envelope else Counter()
        while True:
            rejected = rejects | refused
            done = attempt([position for position in alive if position not in refused], rejected)
            newly = {p: r for p, r in rejected.items() if _refused(r) and p not in refused}
            shaped = any(r.stage == SCHEMA and not _refused(r) for r in rejected.values())
            if not newly or not (typed(done) or shaped):
                return done, rejected
            refused |= newly
            if self.envelope is not None:  # the records it skipped are skipped again
                self.envelope.skipped = Counter(skipped)

    def _inflated(self, records: Sequence[Record], rejected: dict[int, Rejected]) -> list[bytes | None]:
        """The records' payloads decompressed (None: rejected)."""
        inflated, failed = decompress(self.decompress, [record.data for record in records])
        note(rejected, failed)
        return inflated

    def _decoded(
        self,
        records: Sequence[Record],
        inflated: Sequence[bytes | None],
        alive: list[int],
        rejected: dict[int, Rejected],
    ) -> tuple[pa.StructArray, list[int]]:
        """The records at ``alive`` decoded (and transformed): the rows, and each one's record."""
        decoded = self.decoder.decode([inflated[position] for position in alive])  # type: ignore[misc]
        if self.envelope is not None:  # by the records' positions, as every later stage names them
            self.envelope.renumber(alive)
        note(rejected, [reject.at(alive[reject.position]) for reject in decoded.rejects])
        positions = [alive[index] for index in decoded.positions]
        values: pa.StructArray = _without_reserved(decoded.values, positions, rejected)
        if self.transform is not None:
            values, positions = self._transformed(records, values, positions, rejected)
        return values, positions

    def _fitted(
        self, values: pa.StructArray, positions: list[int], rejected: dict[int, Rejected], fields: pa.Schema
    ) -> tuple[Conformed, list[int]]:
        """The rows conformed to ``fields``; a record one of whose rows conflicts is rejected."""
        while True:  # twice at most: a rejected record's fields must not add columns
            values, positions = _without(values, positions, rejected)
            fitted = conform(values, fields, self.policy)
            if not fitted.conflicts:
                return fitted, positions
            for conflict in fitted.conflicts:
                hits = conflict.mask.to_pylist()
                found = [
                    Rejected(positions[i], SCHEMA, conflict.kind, conflict.detail) for i, hit in enumerate(hits) if hit
                ]
                note(rejected, found)

    def _check(self, records: Sequence[Record], rejected: dict[int, Rejected]) -> None:
        """--on-bad-record fail: the page's first record that would be a dead letter raises."""
        if self.fail and rejected:
            first = min(rejected)
            record = records[first]
            raise bad_record(record.shard_id, record.sequence_number, record.sub_sequence_number, rejected[first])

    def _changes(
        self,
        fitted: Conformed,
        positions: list[int],
        rejected: dict[int, Rejected],
        stage: ChangeStage,
        envelopes: Mapping[int, Unwrapped] | None,
    ) -> tuple[Conformed, list[int], Marked]:
        """The changes stage: the rows that are changes, each one's operation and position
        (``envelopes``: each record's, by position; None: ``--changes upsert``)."""
        names = fitted.schema.names
        marked = stage.mark(positions, names, fitted.columns, envelopes)
        note(rejected, [Rejected(r.position, CHANGES, r.kind, r.detail) for r in marked.rejects])
        if len(marked.kept) == len(positions):
            return fitted, positions, marked
        take = pa.array(marked.kept, type=pa.int64())
        columns = [column.take(take) for column in fitted.columns]
        return replace(fitted, columns=columns), [positions[i] for i in marked.kept], marked

    def _folded(self, route: str, rows: pa.RecordBatch, marked: Marked, stage: ChangeStage) -> pa.RecordBatch:
        """A route's rows with their operation and position, one per key (the newest); what
        was dropped (duplicates, superseded) is counted."""
        table = pa.Table.from_batches([rows])
        table = table.append_column(CHANGE_OP, pa.array(marked.ops, type=CHANGE_OP.type))
        table = table.append_column(CHANGE_POSITION, pa.array(marked.positions, type=CHANGE_POSITION.type))
        folded = newest(table, stage.key)
        dropped: Counter[str] = Counter()
        for counts in folded.dropped.values():
            dropped.update(counts)
        self.counts.folded(route, stage.key, dropped)
        return folded.rows.combine_chunks().to_batches()[0]

    def _transformed(
        self, records: Sequence[Record], values: pa.StructArray, positions: list[int], rejected: dict[int, Rejected]
    ) -> tuple[pa.StructArray, list[int]]:
        assert self.transform is not None
        kinesis = _kinesis_columns(records, positions, self.depth)
        batch = pa.RecordBatch.from_arrays(
            [*kinesis.columns, *values.flatten()], names=[*kinesis.schema.names, *[f.name for f in values.type]]
        )
        done = transforms.apply(self.transform, batch, positions)
        note(rejected, done.rejects)
        names = [name for name in done.rows.schema.names if name not in TRANSFORM_INPUT]
        taken = sorted(set(names) & RESERVED)
        if taken:  # the transform wrote a column of ours: none of its rows can be stored
            detail = f"it made column(s) {', '.join(taken)}, which are kinesis-batch's own"
            note(rejected, [Rejected(p, TRANSFORM, "reserved column", detail) for p in sorted(set(done.positions))])
        columns = [done.rows.column(name) for name in names]
        fields = (
            pa.StructArray.from_arrays(columns, names=names)
            if names
            else pa.array([{}] * done.rows.num_rows, type=pa.struct([]))
        )
        return fields, done.positions

    def _rows(
        self, records: Sequence[Record], positions: list[int], columns: list[pa.Array], fields: pa.Schema
    ) -> pa.RecordBatch | None:
        if not positions:
            return None
        seen: Counter[int] = Counter()
        indexes = []
        for position in positions:
            indexes.append(seen[position])
            seen[position] += 1
        metadata = _kinesis_columns(records, positions, self.depth, indexes)
        schema = pa.schema([*METADATA, *fields])
        arrays = [*metadata.columns, *columns]
        if self.batch_id is not None:
            schema, arrays = schema.append(BATCH_ID), [*arrays, pa.array([self.batch_id] * len(positions))]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _dead(self, records: Sequence[Record], rejected: dict[int, Rejected]) -> pa.RecordBatch | None:
        if not rejected:
            return None
        order = sorted(rejected)
        body = record_columns([records[position] for position in order], self.depth, data=True)
        body["stage"] = [rejected[position].stage for position in order]
        body["reason"] = [rejected[position].reason for position in order]
        schema = DEAD_LETTER_SCHEMA
        if self.batch_id is not None:
            schema, body["batch_id"] = schema.append(BATCH_ID), [self.batch_id] * len(order)
        return pa.RecordBatch.from_pydict(body, schema=schema)

    def _count(self, records: int, kept: list[int], rejected: dict[int, Rejected]) -> None:
        counts = self.counts
        landed = len(set(kept))
        counts.records += records
        counts.rows += len(kept)
        counts.dead_letters += len(rejected)
        counts.filtered += records - landed - len(rejected)
        counts.reasons.update(tally(rejected.values()))
        if self.envelope is not None:
            counts.filtered -= sum(self.envelope.skipped.values())
            counts.changes[SKIPPED] += sum(self.envelope.skipped.values())
            self.envelope.skipped.clear()


def _refused(reject: Rejected) -> bool:
    """Rejected for what the record is, not for disagreeing with its page's types."""
    return reject.stage == CHANGES or reject.kind == RESERVED_NAME


def _without_reserved(values: pa.StructArray, positions: list[int], rejected: dict[int, Rejected]) -> pa.StructArray:
    """Decoded fields named like a column of ours cannot be stored beside it: the records that
    have one (not null) are rejected, and the field is taken out."""
    names = [values.type.field(i).name for i in range(values.type.num_fields)]
    taken = [name for name in names if name in RESERVED]
    if not taken:
        return values
    children = values.flatten()
    for name in taken:
        hits = children[names.index(name)].is_valid().to_pylist()
        detail = f"field {name} has the name of a column of kinesis-batch's own; rename it in the producer"
        note(rejected, [Rejected(positions[i], SCHEMA, RESERVED_NAME, detail) for i, hit in enumerate(hits) if hit])
    kept = [i for i, name in enumerate(names) if name not in RESERVED]
    fields = [values.type.field(i) for i in kept]
    return pa.StructArray.from_arrays([children[i] for i in kept], fields=fields, mask=values.is_null())


def _without(
    values: pa.StructArray, positions: list[int], rejected: dict[int, Rejected]
) -> tuple[pa.StructArray, list[int]]:
    """The rows whose records are not rejected."""
    keep = [index for index, position in enumerate(positions) if position not in rejected]
    if len(keep) == len(positions):
        return values, positions
    return values.take(pa.array(keep, type=pa.int64())), [positions[index] for index in keep]


def _kinesis_columns(
    records: Sequence[Record], positions: Sequence[int], depth: int, indexes: Sequence[int] | None = None
) -> pa.RecordBatch:
    """The Kinesis columns of the rows at ``positions`` (with ``record_index`` when given)."""
    body = record_columns([records[position] for position in positions], depth, data=False)
    if indexes is None:
        return pa.RecordBatch.from_pydict(body, schema=pa.schema([METADATA.field(n) for n in body]))
    body["record_index"] = list(indexes)
    return pa.RecordBatch.from_pydict({name: body[name] for name in METADATA.names}, schema=METADATA)


__all__ = ["WAVES", "Page", "Pipeline"]
