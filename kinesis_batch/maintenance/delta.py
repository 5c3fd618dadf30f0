"""Maintenance of a Delta table, with deltalake's own tools where it has them.

- **compact**: ``optimize.compact`` at the target size (one commit, ``dataChange`` false, so a
  catch-up's append that lands meanwhile is not a conflict: deltalake rebases it);
- **expire**: the table's ``delta.logRetentionDuration`` and ``delta.deletedFileRetentionDuration``
  set to the retention (so Delta's own tools agree) and the writers' own log clean-up off,
  ``vacuum`` of the files removed longer ago, then through one loaded table: the markers of its
  commits archived, a checkpoint, and the log cleaned up to it. The app transactions recovery asks
  (``kinesis-batch/<lease table>/<batch>``) live on in the checkpoint; a table that sets
  ``delta.setTransactionRetentionDuration`` would lose them, and is refused in one line;
- **survey** for orphans: the files under the root, those the table or a version it keeps
  references (deltalake's vacuum lists the latter, its "tombstones"), the staged batches.

Every commit is retried when another lands first (a catch-up's publish), up to ATTEMPTS times,
then DependencyError says so in one line: retry later.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from kinesis_batch.errors import DependencyError, InvalidStateError, storage_errors
from kinesis_batch.maintenance.plan import Listed, Survey
from kinesis_batch.maintenance.report import Compacted
from kinesis_batch.maintenance.settings import MaintainSettings
from kinesis_batch.output.delta import TABLE_PROPERTIES, DeltaSink
from kinesis_batch.output.markers import Marker

T = TypeVar("T")
ATTEMPTS = 8
ACTION, ID = "kinesis_batch.action", "kinesis_batch.maintenance_id"
RETENTIONS = ("delta.logRetentionDuration", "delta.deletedFileRetentionDuration")
TRANSACTION_RETENTION = "delta.setTransactionRetentionDuration"
OWN_FOLDERS = ("_delta_log/", "_kinesis_batch/")


class DeltaMaintenance:
    def __init__(self, sink: DeltaSink, maintenance_id: str) -> None:
        self.sink, self.id = sink, maintenance_id
        self.notes: list[str] = []

    def compact(self, settings: MaintainSettings, step: Callable[[str], None]) -> Compacted:
        step("compacting")  # deltalake writes and commits in one call: nothing is written yet
        conflicts = 0

        def optimize(table: Any) -> dict[str, Any]:
            properties = self._properties("compact")
            return dict(table.optimize.compact(target_size=settings.target_bytes, commit_properties=properties))

        metrics, conflicts = self._retrying("compact", optimize)
        step("compacted")
        removed = _stat(metrics.get("filesRemoved"), "totalSize")
        return Compacted(
            partitions=int(metrics.get("partitionsOptimized", 0)),
            files_removed=int(metrics.get("numFilesRemoved", 0)),
            files_added=int(metrics.get("numFilesAdded", 0)),
            bytes_rewritten=removed,
            conflicts=conflicts,
        )

    def expire(self, settings: MaintainSettings, now_ms: int, archive: Callable[[list[Marker]], None]) -> int:
        """The retention set on the table (and the writers' own log clean-up off), removed files
        vacuumed, then the log checkpointed and cleaned through one loaded table: ``archive`` gets
        the markers of every commit in it first, and the clean-up stops at its version, so no
        commit that lands meanwhile can go unarchived. Returns how many log entries went."""
        table = self.sink._load()
        configuration = table.metadata().configuration
        if configuration.get(TRANSACTION_RETENTION):
            raise InvalidStateError(
                f"Delta table {self.sink.uri} sets {TRANSACTION_RETENTION}: its checkpoints would drop the "
                "app transactions that say which batches are in the table; unset it before maintaining"
            )
        wanted = {name: f"interval {settings.retain_hours} hours" for name in RETENTIONS} | TABLE_PROPERTIES
        if any(configuration.get(name) != value for name, value in wanted.items()):
            self._retrying(
                "set the retention",
                lambda t: t.alter.set_table_properties(
                    wanted, raise_if_not_exists=False, commit_properties=self._properties("retention")
                ),
            )
        self._retrying(
            "vacuum",
            lambda t: t.vacuum(
                retention_hours=settings.retain_hours,
                enforce_retention_duration=False,
                dry_run=False,
                commit_properties=self._properties("vacuum"),
            ),
        )
        before = self._log_entries()
        with self._errors("clean up the log of"):
            table = self.sink._load()
            commits = table.history()
            archive([marker for commit in commits if (marker := Marker.of(commit, int(commit.get("timestamp", 0))))])
            table.create_checkpoint()
            table.cleanup_metadata()  # up to this table's version: every commit it can drop was archived
        return max(0, before - self._log_entries())

    def survey(self) -> Survey:
        """The files under the root but the log and our bookkeeping; referenced: the table's
        files and those of the versions it keeps (deltalake's vacuum lists those, its tombstones)."""
        listed = {
            path: Listed(size, modified)
            for path, (size, modified) in self.sink.root.files(recursive=True).items()
            if not path.startswith(OWN_FOLDERS)
        }
        staged = {folder for folder in self.sink.bookkeeping().folders() if not folder.startswith("_")}
        with self._errors("list the files of"):
            removed = self.sink._load().vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=True)
        referenced = {file.path for file in self.sink.data_files()} | set(removed)
        return Survey(listed, referenced, staged)

    def remove(self, paths: list[str]) -> None:
        for path in paths:
            self.sink.root.delete(path)

    # -- helpers ----------------------------------------------------------------------------------

    def _properties(self, action: str) -> Any:
        from deltalake import CommitProperties

        return CommitProperties(custom_metadata={ACTION: action, ID: self.id})

    def _retrying(self, what: str, call: Callable[[Any], T]) -> tuple[T, int]:
        """``call(table)`` on a freshly loaded table until no other commit got there first."""
        from deltalake.exceptions import CommitFailedError

        for attempt in range(ATTEMPTS):
            with self._errors(f"{what}"):
                try:
                    return call(self.sink._load()), attempt
                except CommitFailedError:
                    continue
        raise DependencyError(
            f"maintenance of {self.sink.uri} gave way to other commits {ATTEMPTS} times in a row ({what}); "
            "nothing is lost: run it again later"
        )

    def _log_entries(self) -> int:
        return sum(1 for name in self.sink.root.child("_delta_log").list() if name.endswith(".json"))

    def _errors(self, what: str) -> AbstractContextManager[None]:
        from deltalake.exceptions import CommitFailedError

        doing = f"cannot {what} the Delta table at {self.sink.uri}"
        return storage_errors(doing, remote=self.sink.root.on_s3, passing=(CommitFailedError,))


def _stat(text: Any, key: str) -> int:
    """A figure of deltalake's optimize metrics, which give some as JSON text."""
    try:
        return int(json.loads(text).get(key, 0)) if text else 0
    except (TypeError, ValueError):
        return 0


def maintainer(table: DeltaSink, maintenance_id: str) -> DeltaMaintenance:
    """The format's maintainer (kinesis_batch.output.formats) of ``table``, the sink its row opens."""
    return DeltaMaintenance(table, maintenance_id)


__all__ = ["DeltaMaintenance", "maintainer"]
