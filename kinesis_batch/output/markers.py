"""The marker archive: the batch markers of a table's commits, kept where expiring the table's
history cannot reach them.

A table sink's marker (kinesis_batch.output.tables) lives in the commit that published or
discarded the batch: Delta's commit metadata, an Iceberg snapshot's summary. Expiring snapshots
and cleaning Delta's log (kinesis_batch.maintenance) drop those commits, and with them what
recovery asks ("is batch B in the table, and where did each shard end?"). So maintenance first
copies every marker of ours in the table's history here, one file per batch::

    <table's bookkeeping>/_markers/<app>/<batch>.json    {"action", "batch_id", "app", "stream",
                                                          "committed_at_ms", "commit_record"}
    <table's bookkeeping>/_markers/<app>/_latest.json     the newest published one

Contract:
- A marker is a fact about a commit that happened, so it never changes: :meth:`MarkerArchive.put`
  writes it whole (readers see all of it or nothing) and writing it again is harmless.
- Copied before expiry, read after the table's own history: a marker is always in the table or
  here, so maintenance can never make a committed batch look uncommitted, nor the reverse.
- ``_latest.json`` only moves forwards (:meth:`MarkerArchive.keep_latest`): the newest published
  marker, for the status views once the table's history holds none of this consumer's commits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord

LATEST = "_latest.json"


@dataclass(frozen=True)
class Marker:
    """What one commit of ours said of one batch: ``action`` is ``publish`` or ``discard``;
    a publish carries its commit record (as JSON text)."""

    batch_id: str
    action: str
    app: str
    stream: str
    committed_at_ms: int
    commit_record: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Marker:
        return cls(**json.loads(text))

    def record(self) -> CommitRecord | None:
        return CommitRecord.from_json(self.commit_record) if self.commit_record else None

    @classmethod
    def of(cls, metadata: Mapping[str, str], committed_at_ms: int) -> Marker | None:
        """The marker a commit's metadata (Delta's commit info, an Iceberg snapshot's summary)
        carries, or None when the commit is not a publish or discard of ours."""
        action = metadata.get("kinesis_batch.action")
        if action not in ("publish", "discard") or not metadata.get("kinesis_batch.batch_id"):
            return None
        return cls(
            batch_id=metadata["kinesis_batch.batch_id"],
            action=action,
            app=metadata.get("kinesis_batch.app", ""),
            stream=metadata.get("kinesis_batch.stream", ""),
            committed_at_ms=committed_at_ms,
            commit_record=metadata.get("kinesis_batch.commit_record"),
        )


class MarkerArchive:
    """One consumer's (``app``: its lease table) archived markers in a table's bookkeeping."""

    def __init__(self, bookkeeping: Place, app: str) -> None:
        self.place = bookkeeping.child("_markers", app)

    def get(self, batch_id: str) -> Marker | None:
        text = self.place.read_text(f"{batch_id}.json")
        return Marker.from_json(text) if text is not None else None

    def put(self, marker: Marker) -> None:
        self.place.write_text(f"{marker.batch_id}.json", marker.to_json())

    def archived(self) -> set[str]:
        """The batch ids archived so far (one listing)."""
        return {name.removesuffix(".json") for name in self.place.list() if name.endswith(".json") and name != LATEST}

    def latest(self) -> Marker | None:
        text = self.place.read_text(LATEST)
        return Marker.from_json(text) if text is not None else None

    def keep_latest(self, candidates: list[Marker]) -> None:
        """Move ``_latest.json`` to the newest published marker of ``candidates``, if newer."""
        published = [marker for marker in candidates if marker.action == "publish"]
        newest = max(published, key=lambda marker: marker.committed_at_ms, default=None)
        current = self.latest()
        if newest is not None and (current is None or newest.committed_at_ms > current.committed_at_ms):
            self.place.write_text(LATEST, newest.to_json())


__all__ = ["LATEST", "Marker", "MarkerArchive"]
