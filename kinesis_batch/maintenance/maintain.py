"""One maintenance run of an output: its steps in order, each told to observers
(kinesis_batch.events), the last of them keeping the report in the output's bookkeeping.

1. **compact** the small files of each partition (``compacting``: the new files are written,
   the commit that swaps them in is next; ``compacted``: it landed);
2. **archive** every batch marker of the table's history (kinesis_batch.output.markers)
   (``archived``), from the very table state that
3. **expire** then drops old snapshots and versions of (``expired``): recovery and the status
   views never lose one, also of a commit that lands meanwhile; with them, a table of current
   state's tombstones of deletes older than ``tombstone_hours`` (kinesis_batch.output.tombstones:
   the rest compacted into one file, written before the old ones go, so a crash between leaves
   the same facts twice);
4. **remove orphans**: files no kept commit references and no staged batch uses, old enough
   (``orphans_found``: found, not yet deleted), and the staging a crash left of a batch that was
   published;
5. keep the report as the output's last maintenance (``maintained``).

A stop asked for (kinesis_batch.stopping: SIGINT, SIGTERM, Airflow's ``on_kill``) ends it between
two steps, with ShutdownError.

Every step may meet a catch-up run committing to the same table: each format's commits assert
what they were planned against and retry, bounded (see its module). Every step is safe to
repeat after a crash at any point: a re-run redoes what did not land.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from kinesis_batch.errors import ForeignOutputError
from kinesis_batch.events import Event, emit
from kinesis_batch.maintenance.plan import Survey, orphans
from kinesis_batch.maintenance.report import Compacted, MaintenanceReport, keep
from kinesis_batch.maintenance.settings import MaintainSettings
from kinesis_batch.output.datafiles import FileStats
from kinesis_batch.output.formats import format_of
from kinesis_batch.output.markers import Marker, MarkerArchive
from kinesis_batch.output.sink import Stored
from kinesis_batch.output.tombstones import Tombstones
from kinesis_batch.stopping import StopRequest
from kinesis_batch.storage.place import Place

Progress = Callable[[str], None]


class Maintainer(Protocol):
    """One format's side of each step (kinesis_batch.maintenance.delta, .iceberg, .parquet)."""

    notes: list[str]

    def compact(self, settings: MaintainSettings, step: Callable[[str], None]) -> Compacted:
        """Rewrite small files into files of the target size; ``step`` is told ``compacting``
        before each commit and ``compacted`` after it."""

    def expire(self, settings: MaintainSettings, now_ms: int, archive: Callable[[list[Marker]], None]) -> int:
        """Drop the snapshots or versions older than the retention; how many went. Before any
        goes, ``archive`` gets every publish and discard marker (of every consumer) of the table
        state the expiry works on: nothing it drops can be a commit ``archive`` did not see."""

    def survey(self) -> Survey:
        """The files under the table, those its kept commits reference, the staged batches."""

    def remove(self, paths: list[str]) -> None:
        """Delete ``paths`` (under the table's root); a path gone already is fine."""


def maintain(
    sink: Stored,
    settings: MaintainSettings | None = None,
    *,
    clock: Callable[[], float] = time.time,
    progress: Progress = lambda line: None,
    stop: StopRequest | None = None,
) -> MaintenanceReport:
    """Maintain ``sink`` (a table or a parquet folder) now; ``clock`` decides what is old;
    ``stop`` asked for, it stops between two steps (ShutdownError). Refuses, touching nothing,
    an output that is another format's table or none of kinesis-batch's (ForeignOutputError)."""
    settings = settings or MaintainSettings()
    maintenance_id = f"maintain-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:8]}"
    started = datetime.now(UTC)

    def step(name: str) -> None:
        emit(Event(name, maintenance_id))

    stop = stop or StopRequest()

    def stop_point(done: str) -> None:  # between two steps: each left the table whole
        if stop.requested:
            raise stop.error(f"maintenance of {sink.uri} stopped {done}; what it did stays, a re-run does the rest")

    sink.check_place()  # another format's table, or somebody else's files: never touched
    maintainer = maintainer_of(sink, maintenance_id)
    if not sink.is_ours():
        raise ForeignOutputError(
            f"{sink.uri} is not an output of kinesis-batch (no run made it or published into it): "
            "maintain touches nothing of it"
        )
    stop_point("before it began")
    before = FileStats.of(sink.data_files())
    progress(f"compacting {before.files} files in {before.partitions} partitions of {sink.uri}")
    compacted = maintainer.compact(settings, step)
    stop_point("after compacting")
    markers: list[Marker] = []
    archived = 0

    def archiving(found: list[Marker]) -> None:
        nonlocal archived
        archived += archive(found, sink.bookkeeping())
        markers.extend(found)
        step("archived")

    now_ms = int(clock() * 1000)
    expired = maintainer.expire(settings, now_ms, archiving)
    tombstones_kept, tombstones_expired = Tombstones(sink.table_sink().bookkeeping()).expire(
        settings.tombstone_hours, datetime.fromtimestamp(now_ms / 1000, UTC)
    )
    step("expired")
    stop_point("after expiring old versions")
    survey = maintainer.survey()
    leftovers = published_leftovers(survey.staged, markers, sink.bookkeeping())
    survey = Survey(survey.listed, survey.referenced, survey.staged - leftovers)
    found = orphans(survey, now_ms=now_ms, retain=settings.retain)
    step("orphans_found")
    for batch in sorted(leftovers):  # a published batch's bookkeeping a crash left: nothing reads it
        sink.table_sink().staging(batch).delete_all()
    maintainer.remove(found)
    report = MaintenanceReport(
        maintenance_id=maintenance_id,
        format=sink.format,
        uri=sink.uri,
        started_at=started,
        finished_at=datetime.now(UTC),
        compacted=compacted,
        markers_archived=archived,
        versions_expired=expired,
        orphans_removed=len(found),
        orphan_bytes=sum(survey.listed[path].bytes for path in found),
        tombstones_kept=tombstones_kept,
        tombstones_expired=tombstones_expired,
        before=before,
        after=FileStats.of(sink.data_files()),
        notes=tuple(maintainer.notes),
    )
    keep(report, sink.bookkeeping())
    step("maintained")
    for line in report.lines():
        progress(line)
    return report


def archive(markers: list[Marker], bookkeeping: Place) -> int:
    """Copy the markers not archived yet, per consumer, and move each consumer's latest one;
    how many were copied."""
    by_app: dict[str, list[Marker]] = defaultdict(list)
    for marker in markers:
        by_app[marker.app].append(marker)
    copied = 0
    for app, found in by_app.items():
        archive = MarkerArchive(bookkeeping, app)
        known = archive.archived()
        for marker in found:
            if marker.batch_id not in known:
                archive.put(marker)
                copied += 1
        archive.keep_latest(found)
    return copied


def published_leftovers(staged: set[str], markers: list[Marker], bookkeeping: Place) -> set[str]:
    """The staged batches that are published (a publish killed between its commit and its clean
    up leaves the staging): by the table's markers, or the archive of any of its consumers."""
    published = {marker.batch_id for marker in markers if marker.action == "publish"}
    left = staged & published
    for app in bookkeeping.child("_markers").folders():
        archive = MarkerArchive(bookkeeping, app)
        for batch in staged - left:
            marker = archive.get(batch)
            if marker is not None and marker.action == "publish":
                left.add(batch)
    return left


def maintainer_of(sink: Stored, maintenance_id: str) -> Maintainer:
    """The format's maintainer of ``sink``'s table (a decoding pair: its table), from its row of
    the table of formats (kinesis_batch.output.formats: ``kinesis_batch.maintenance.FORMAT``)."""
    table = sink.table_sink()
    maintainer: Maintainer = format_of(table.format).maintenance().maintainer(table, maintenance_id)
    return maintainer


__all__ = ["Maintainer", "archive", "maintain", "maintainer_of"]
