"""The read step's routes: where each route's files go, and, once every task is done, the
tables the batch makes. A run without ``--route-by`` has one route whose table is fixed
(kinesis_batch.output.composite): its target is that table, and nothing is decided.

- :func:`targets`: before the Spark job, each known table's data place and layout (and a
  template's tables' fields, which the tasks fit rows to); a route without a table is written
  to the batch's staging (kinesis_batch.spark.targets).
- :func:`decide`: after the job, of the new routes the batch found, it makes at most
  ``--max-new-tables`` tables (by name: kinesis_batch.routing.routes.new_tables), records the
  decision in the staging before any file moves (so that a discard finds every table the
  batch touched), moves their files in, and turns the records of the refused routes into dead
  letters with the reason, fixing each shard's counts. The staging of new routes is gone
  after it: nothing of it can be published.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kinesis_batch.columns import REASON, decoded
from kinesis_batch.decoding.rejects import ROUTE
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.output.changes import NEW_TABLE_LAYOUT
from kinesis_batch.output.composite import AT_ONCE, RunSink
from kinesis_batch.routing.routes import COLLIDES, HELD_ROUTE, NOT_OURS, TOO_MANY_NEW, collisions, new_tables
from kinesis_batch.run.context import RunContext
from kinesis_batch.spark.files import TaskFiles
from kinesis_batch.spark.targets import RouteTargets, Target
from kinesis_batch.storage.layout import FileLayout, choose
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.staged import HELD, RangeResult, StagedFile, staged

REFUSED = f"{ROUTE}: {TOO_MANY_NEW}"  # the dead letters' reasons, as the counts name them
FOREIGN = f"{ROUTE}: {NOT_OURS}"
BY_ROUTE = ("tables", "table_records", "keys", "table_changes")  # a range's counts kept by route


def targets(context: RunContext, sink: RunSink, decode: DecodeSpec | None) -> tuple[RouteTargets, DecodeSpec | None]:
    """Where the tasks write each route's rows, and the decoding with each known table's fields."""
    batch_id, target_bytes = context.run_id, context.config.target_bytes
    known: dict[str, Target] = {}
    for route in sorted(sink.known):
        table = sink.table(route)
        data = table.data(batch_id)
        data.make_dirs()
        known[route] = Target(data, table.file_layout(target_bytes))
    sink.targeted(batch_id, known)
    new = sink.new_routes(batch_id)
    if new is None:
        return RouteTargets(known), decode
    new.make_dirs()
    asked = context.config.partition_by or (NEW_TABLE_LAYOUT if context.config.changes else None)
    partition = choose(asked, None, new=True, where="a new table")
    fitted = replace(decode, tables=sink.route_fields()) if decode is not None else None
    return RouteTargets(known, Target(new, sink.new_layout(partition, target_bytes))), fitted


def decide(context: RunContext, sink: RunSink, decode: DecodeSpec, dead_layout: FileLayout) -> None:
    """Make the batch's new tables, move their files in, and turn the refused routes' records
    into dead letters (see the module's doc). Nothing to decide without new routes."""
    batch_id = context.run_id
    new = sink.new_routes(batch_id)
    if new is None:
        return
    assert decode.routing is not None  # a template's runs route
    results = staged(sink.results(batch_id))
    rows_by_route: Counter[str] = Counter()
    for result in results.values():
        rows_by_route.update({r: n for r, n in result.counts.get("tables", {}).items() if r not in sink.known})
    if not rows_by_route:
        new.delete_all()
        return
    made = new_tables(rows_by_route, sink.known, decode.routing.max_new)
    colliding = collisions(rows_by_route, sink.known)
    over = set(rows_by_route) - made - set(colliding)
    columns = {route: decoded(decode.declared_for(route)) for route in made}
    foreign = sink.prepare_tables(columns, context.config.partition_by)
    made -= set(foreign)
    # Each refused route beside those past the limit: (its kind, the one line that says why).
    why = {
        route: (COLLIDES, f"{route} and {first} would be one table where names fold case")
        for route, first in colliding.items()
    }
    why |= {route: (NOT_OURS, said) for route, said in foreign.items()}
    refused = {route: REFUSED for route in over} | {route: f"{ROUTE}: {kind}" for route, (kind, _) in why.items()}
    sink.decided(batch_id, made, refused)
    moving = [file for result in results.values() for file in result.files if file.route in made]
    places = {route: sink.table(route).data(batch_id) for route in made}

    def move(file: StagedFile) -> None:
        new.child(str(file.route)).move(file.name, places[str(file.route)])

    with ThreadPoolExecutor(AT_ONCE, thread_name_prefix="move") as pool:
        list(pool.map(move, moving))
    held = [file for result in results.values() for file in result.held_files]
    reasons = {route: f"{kind}: {said}" for route, (kind, said) in why.items()}
    dead = _dead_letters(new.child(HELD), held, refused, reasons, sink.data(batch_id), dead_layout) if refused else []
    _rewrite(sink.results(batch_id), results, refused, dead)
    new.delete_all()
    if made:
        context.progress(f"route: {len(made)} new tables: {', '.join(sorted(made))}")
    for route, (_, said) in sorted(why.items()):
        context.progress(f"route: {said}: its {rows_by_route[route]} rows' records are dead letters ({refused[route]})")
    if over:
        records = sum(rows_by_route[route] for route in over)
        named = ", ".join(sorted(over)[:10]) + (f" and {len(over) - 10} more" if len(over) > 10 else "")
        context.progress(
            f"route: {len(over)} more new route values than --max-new-tables {decode.routing.max_new} allows "
            f"({named}): their {records} records are dead letters ({REFUSED})"
        )


def _dead_letters(
    place: Place,
    held: list[StagedFile],
    refused: Mapping[str, str],
    reasons: Mapping[str, str],
    data: Place,
    layout: FileLayout,
) -> list[StagedFile]:
    """The records of the ``refused`` routes in the ``held`` files (in ``place``), written as
    dead letters into ``data``; a route in ``reasons`` gets that reason instead of the one the
    tasks held them with (past --max-new-tables)."""
    wanted = pa.array(sorted(refused), pa.string())
    with TaskFiles(data, "routed", layout) as files:
        for file in held:
            with place.filesystem().open_input_file(place.child(file.name).path) as stream:
                table = pq.read_table(stream)
            table = table.filter(pc.is_in(table.column(HELD_ROUTE), value_set=wanted))
            if reasons:
                routes, said = table.column(HELD_ROUTE).to_pylist(), table.column(REASON.name).to_pylist()
                given = [reasons.get(route, reason) for route, reason in zip(routes, said, strict=True)]
                at = table.schema.get_field_index(REASON.name)
                table = table.set_column(at, REASON.name, pa.array(given, REASON.type))
            for batch in table.drop_columns([HELD_ROUTE]).to_batches():
                files.write(batch)
    return list(files.files)


def _rewrite(results: Place, found: dict[str, RangeResult], refused: Mapping[str, str], dead: list[StagedFile]) -> None:
    """Each range's result without the refused routes' files (their records counted as dead
    letters now) and without held files; the new dead letters go with the first range."""
    for index, (shard_id, result) in enumerate(sorted(found.items())):
        files = tuple(f for f in result.files if f.route not in refused)
        more = tuple(dead) if index == 0 else ()
        counts = refused_counts(result.counts, refused)
        kept = replace(result, files=files, dead_letter_files=result.dead_letter_files + more, counts=counts)
        results.write_text(f"{shard_id}.json", replace(kept, held_files=()).to_json())


def refused_counts(counts: dict[str, Any], refused: Mapping[str, str]) -> dict[str, Any]:
    """A range's counts once the ``refused`` routes' records are dead letters, not rows
    (``refused``: route -> the reason they are counted under)."""
    tables, records = counts.get("tables", {}), counts.get("table_records", {})
    gone = [route for route in refused if route in tables]
    if not gone:
        return counts
    rows = sum(tables[route] for route in gone)
    letters = sum(records.get(route, 0) for route in gone)
    reasons = Counter(counts.get("reasons", {}))
    for route in gone:
        reasons[refused[route]] += records.get(route, 0)
    kept = {name: {r: v for r, v in counts[name].items() if r not in refused} for name in BY_ROUTE if name in counts}
    return {
        **counts,
        **kept,
        "rows": counts.get("rows", 0) - rows,
        "dead_letters": counts.get("dead_letters", 0) + letters,
        "reasons": dict(reasons.most_common()),
    }


__all__ = ["FOREIGN", "REFUSED", "decide", "refused_counts", "targets"]
