"""Maintenance of parquet folders: no log, no versions, so compaction is per batch folder and by
the same rename protocol as publishing, and there is nothing to expire.

- **compact**: a batch folder (``batch_id=<batch>/``) whose partitions hold several small files
  is copied into ``_compacting/<batch>-<nonce>/``: the small files rewritten into files of the
  target size, every other file (its ``_commit.json`` marker too) hard-linked. The copy then
  takes the folder's place in one step (kinesis_batch.maintenance.exchange), and the old one,
  now in ``_compacting/``, is deleted. Rows never move between batches: a batch's folder name
  is its rows' ``batch_id``. A crash leaves a copy in ``_compacting/`` (an orphan) and the batch
  folder whole, old or new.
- **expire**: nothing: no versions, and a batch's marker is its folder's ``_commit.json``;
- **survey** for orphans: what crashes leave (``_compacting/``, ``_discarded/``, hidden temporary
  files in batch folders); nothing references those, and nothing staged is among them (the runs'
  staging, ``_staging/``, is the runs' own to settle).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.maintenance import exchange
from kinesis_batch.maintenance.plan import Compaction, Listed, Survey, compactions
from kinesis_batch.maintenance.report import Compacted
from kinesis_batch.maintenance.rewrite import rewrite
from kinesis_batch.maintenance.settings import MaintainSettings
from kinesis_batch.output.markers import Marker
from kinesis_batch.output.parquet import ParquetSink
from kinesis_batch.storage.place import Place

COMPACTING, DISCARDED = "_compacting", "_discarded"
NO_EXCHANGE = (
    "parquet folders are compacted by swapping a batch folder for its compacted copy in one step "
    "(Linux renameat2), which this file system does not offer: not compacted"
)


class ParquetMaintenance:
    def __init__(self, sink: ParquetSink, maintenance_id: str) -> None:
        self.sink, self.id = sink, maintenance_id
        self.notes: list[str] = []

    def compact(self, settings: MaintainSettings, step: Callable[[str], None]) -> Compacted:
        by_batch: dict[str, list[Compaction]] = defaultdict(list)
        for compaction in compactions(self.sink.data_files(), settings.target_bytes):
            by_batch[compaction.group].append(compaction)
        if not by_batch:
            return Compacted()
        if not exchange.supported(self.sink.root):
            self.notes.append(NO_EXCHANGE)
            return Compacted()
        done = Compacted()
        for batch, planned in sorted(by_batch.items()):
            done += self._compact_batch(batch, planned, settings.target_bytes, step)
        return done

    def _compact_batch(
        self, batch: str, planned: list[Compaction], target: int, step: Callable[[str], None]
    ) -> Compacted:
        published = self.sink.published(batch)
        copy = self.sink.root / COMPACTING / f"{batch}-{uuid.uuid4().hex[:8]}"
        prefix = f"{published.name}/"
        rewritten = {file.path.removeprefix(prefix) for compaction in planned for file in compaction.inputs}
        added = 0
        for name in Place(str(published)).sizes(recursive=True):
            if name in rewritten or Path(name).name.startswith("."):
                continue  # rewritten below; or a writer's temporary, not the batch's
            target_path = copy / name
            target_path.parent.mkdir(parents=True, exist_ok=True)
            os.link(published / name, target_path)
        for compaction in planned:
            inputs = [Place(str(self.sink.root / file.path)) for file in compaction.inputs]
            folder = compaction.inputs[0].path.removeprefix(prefix).rpartition("/")[0]
            added += len(rewrite(inputs, Place(str(copy)), folder=folder, target_bytes=target))
        step("compacting")
        exchange.exchange(published, copy)  # the copy is the batch now; the old folder is in its place
        step("compacted")
        shutil.rmtree(copy, ignore_errors=True)
        return Compacted(len(planned), len(rewritten), added, sum(compaction.bytes for compaction in planned))

    def expire(self, settings: MaintainSettings, now_ms: int, archive: Callable[[list[Marker]], None]) -> int:
        archive([])  # a batch's marker is its folder's _commit.json: nothing to archive, nothing expires
        return 0

    def survey(self) -> Survey:
        root = Place(str(self.sink.root))
        listed = {}
        for path, (size, modified) in root.files(recursive=True).items():
            leftover = path.startswith((f"{COMPACTING}/", f"{DISCARDED}/"))
            temporary = path.startswith("batch_id=") and Path(path).name.startswith(".")
            if leftover or temporary:
                listed[path] = Listed(size, modified)
        return Survey(listed, set(), set())

    def remove(self, paths: list[str]) -> None:
        root = Place(str(self.sink.root))
        for path in paths:
            root.delete(path)
        for folder in (COMPACTING, DISCARDED):  # the folders a crash left, once emptied
            _prune_empty(self.sink.root / folder)


def _prune_empty(folder: Path) -> None:
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def maintainer(table: ParquetSink, maintenance_id: str) -> ParquetMaintenance:
    """The format's maintainer (kinesis_batch.output.formats) of ``table``, the sink its row opens."""
    if not table.root.is_dir():
        raise InvalidStateError(f"no output at {table.root} (a run creates it)")
    return ParquetMaintenance(table, maintenance_id)


__all__ = ["ParquetMaintenance", "maintainer"]
