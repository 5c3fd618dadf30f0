"""Maintenance of an Iceberg table. pyiceberg 0.12 has snapshot expiry but no compaction and no
orphan removal, so those two are ours.

- **compact**: per partition, its small files rewritten (kinesis_batch.maintenance.rewrite) into
  ``data/_compacted/<partition folder>/``, then one snapshot that deletes them and adds the new
  ones, committed on top of the snapshot they were read from: the commit asserts ``main`` has
  not moved. When it moved (a catch-up published), reload: if every rewritten file is still in
  the table, commit the same new files again; if one is gone (another maintenance rewrote it),
  drop the new files and leave that partition to the next run. pyiceberg cannot write
  Iceberg's ``replace`` operation (its summaries refuse it), so the snapshot is an
  ``overwrite`` whose rows are the same.
- **expire**: the snapshots of one loaded table older than the retention but the current one
  (``expire_snapshots``), their markers archived first;
- **survey** for orphans: every file under the table's location, and those the current
  metadata, the metadata log and the kept snapshots reference (manifest lists, manifests, data
  files).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kinesis_batch.errors import DependencyError
from kinesis_batch.maintenance.plan import Compaction, Listed, Survey, compactions, expired
from kinesis_batch.maintenance.report import Compacted
from kinesis_batch.maintenance.rewrite import Written, rewrite
from kinesis_batch.maintenance.settings import MaintainSettings
from kinesis_batch.output.iceberg import IcebergSink, current_files, file_uri, table_partitioning
from kinesis_batch.output.markers import Marker
from kinesis_batch.storage.place import Place

ATTEMPTS = 8
COMPACTED = "_compacted"  # under data/: no batch id starts with _, so no staged batch is named so


class IcebergMaintenance:
    def __init__(self, sink: IcebergSink, maintenance_id: str) -> None:
        self.sink, self.id = sink, maintenance_id
        self.notes: list[str] = []

    def compact(self, settings: MaintainSettings, step: Callable[[str], None]) -> Compacted:
        table = self.sink._load()
        partition = table_partitioning(table)
        values = [value for value, _ in current_files(table)]
        done = Compacted()
        for compaction in compactions(values, settings.target_bytes):
            folder = partition.folder(compaction.partition) if partition is not None else ""
            done += self._compact_one(compaction, folder, settings.target_bytes, step)
        return done

    def _compact_one(self, compaction: Compaction, folder: str, target: int, step: Callable[[str], None]) -> Compacted:
        out = self.sink.root().child("data", COMPACTED)
        inputs = [Place(file.path, self.sink.s3) for file in compaction.inputs]
        written = rewrite(inputs, out, folder=folder, target_bytes=target)
        step("compacting")
        replaced = {file.path for file in compaction.inputs}
        for attempt in range(ATTEMPTS):
            table = self.sink._load()
            current = {value.path: file for value, file in current_files(table)}
            if not replaced <= set(current):  # another maintenance rewrote some of them meanwhile
                _delete(out, written)
                return Compacted(conflicts=attempt + 1)
            if self._commit(table, [current[path] for path in sorted(replaced)], out, written):
                step("compacted")
                return Compacted(1, len(replaced), len(written), compaction.bytes, attempt)
        _delete(out, written)
        raise DependencyError(
            f"compaction of {self.sink.identifier} gave way to other commits {ATTEMPTS} times in a row; "
            "nothing is lost: run maintain again later"
        )

    def _commit(self, table: Any, old: list[Any], out: Place, written: list[Written]) -> bool:
        """One snapshot replacing ``old`` with ``written``, on top of ``table``'s; False if the
        table moved since it was loaded."""
        from pyiceberg.exceptions import CommitFailedException
        from pyiceberg.io.pyarrow import parquet_file_to_data_file

        properties = {"kinesis_batch.action": "compact", "kinesis_batch.maintenance_id": self.id}
        try:
            with self.sink.errors(), table.transaction() as tx:
                uris = [file_uri(out.child(file.name)) for file in written]
                new = [parquet_file_to_data_file(tx._table.io, tx.table_metadata, uri) for uri in uris]
                with tx.update_snapshot(snapshot_properties=properties).overwrite() as overwrite:
                    for file in old:
                        overwrite.delete_data_file(file)
                    for file in new:
                        overwrite.append_data_file(file)
        except CommitFailedException:
            return False
        return True

    def expire(self, settings: MaintainSettings, now_ms: int, archive: Callable[[list[Marker]], None]) -> int:
        """The snapshots of one loaded table older than the retention, but the current one;
        ``archive`` gets the markers of all its snapshots first, so a snapshot committed
        meanwhile is neither expired nor unarchived. No requirement to assert: the catalog applies
        the removal to the table as it is when it commits. Returns how many were expired."""
        from pyiceberg.exceptions import CommitFailedException

        for _ in range(ATTEMPTS):
            table = self.sink._load()
            archive(_markers(table))
            current = table.current_snapshot()
            snapshots = [(snapshot.snapshot_id, snapshot.timestamp_ms) for snapshot in table.snapshots()]
            ids = expired(snapshots, current.snapshot_id if current else None, now_ms=now_ms, retain=settings.retain)
            if not ids:
                return 0
            try:
                with self.sink.errors():
                    table.maintenance.expire_snapshots().by_ids(ids).commit()
            except CommitFailedException:
                continue
            return len(ids)
        raise DependencyError(
            f"expiring snapshots of {self.sink.identifier} gave way to other commits {ATTEMPTS} times in a row; "
            "run maintain again later"
        )

    def survey(self) -> Survey:
        root = self.sink.root()
        listed = {
            path: Listed(size, modified)
            for path, (size, modified) in root.files(recursive=True).items()
            if not path.startswith("_kinesis_batch/")
        }
        staged = {folder for folder in self.sink.bookkeeping().folders() if not folder.startswith("_")}
        with self.sink.errors():
            table = self.sink._load()
            referenced = {_relative(root, path) for path in _referenced(table)}
        return Survey(listed, referenced, staged)

    def remove(self, paths: list[str]) -> None:
        root = self.sink.root()
        for path in paths:
            root.delete(path)


def _markers(table: Any) -> list[Marker]:
    """The publish and discard markers of the loaded table's snapshots."""
    found = []
    for snapshot in table.snapshots():
        summary = snapshot.summary.additional_properties if snapshot.summary else {}
        marker = Marker.of(summary, int(snapshot.timestamp_ms))
        if marker is not None:
            found.append(marker)
    return found


def _referenced(table: Any) -> Iterator[str]:
    """Every file the table's metadata reaches: its metadata files, and for each kept snapshot
    its manifest list, manifests and live data files (a manifest shared by snapshots once)."""
    metadata = table.metadata
    yield table.metadata_location
    yield from (entry.metadata_file for entry in metadata.metadata_log)
    io, seen = table.io, set()
    for snapshot in metadata.snapshots:
        yield snapshot.manifest_list
        for manifest in snapshot.manifests(io):
            if manifest.manifest_path in seen:
                continue
            seen.add(manifest.manifest_path)
            yield manifest.manifest_path
            yield from (entry.data_file.file_path for entry in manifest.fetch_manifest_entry(io, discard_deleted=True))


def _relative(root: Place, path: str) -> str:
    return Place(path).uri.removeprefix(root.uri.rstrip("/") + "/")


def _delete(out: Place, written: list[Written]) -> None:
    for file in written:
        out.delete(file.name)


def maintainer(table: IcebergSink, maintenance_id: str) -> IcebergMaintenance:
    """The format's maintainer (kinesis_batch.output.formats) of ``table``, the sink its row opens."""
    return IcebergMaintenance(table, maintenance_id)


__all__ = ["IcebergMaintenance", "maintainer"]
