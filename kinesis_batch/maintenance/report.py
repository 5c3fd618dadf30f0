"""What a maintenance run did: its JSON (printed by ``maintain --json``, kept in the output's
bookkeeping as the last maintenance) and its lines."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from kinesis_batch.output.datafiles import MIB, FileStats
from kinesis_batch.storage.place import Place

LAST = "_maintenance.json"


@dataclass(frozen=True)
class Compacted:
    """What compaction did: partitions rewritten, files it removed and added, bytes it read, and
    commits of others it gave way to (reloaded and tried again)."""

    partitions: int = 0
    files_removed: int = 0
    files_added: int = 0
    bytes_rewritten: int = 0
    conflicts: int = 0

    def __add__(self, other: Compacted) -> Compacted:
        return Compacted(
            self.partitions + other.partitions,
            self.files_removed + other.files_removed,
            self.files_added + other.files_added,
            self.bytes_rewritten + other.bytes_rewritten,
            self.conflicts + other.conflicts,
        )


@dataclass(frozen=True)
class MaintenanceReport:
    maintenance_id: str
    format: str
    uri: str
    started_at: datetime
    finished_at: datetime
    compacted: Compacted
    markers_archived: int
    versions_expired: int
    orphans_removed: int
    orphan_bytes: int
    before: FileStats
    after: FileStats
    notes: tuple[str, ...] = field(default_factory=tuple)
    tombstones_kept: int = 0
    tombstones_expired: int = 0

    @property
    def seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()

    def to_json(self) -> dict[str, Any]:
        body = asdict(self)
        body |= {
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "seconds": round(self.seconds, 3),
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "notes": list(self.notes),
        }
        return body

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> MaintenanceReport:
        stats = {name: body[name] for name in ("before", "after")}
        return cls(
            maintenance_id=body["maintenance_id"],
            format=body["format"],
            uri=body["uri"],
            started_at=datetime.fromisoformat(body["started_at"]),
            finished_at=datetime.fromisoformat(body["finished_at"]),
            compacted=Compacted(**body["compacted"]),
            markers_archived=int(body["markers_archived"]),
            versions_expired=int(body["versions_expired"]),
            orphans_removed=int(body["orphans_removed"]),
            orphan_bytes=int(body["orphan_bytes"]),
            before=FileStats.from_json(stats["before"]),
            after=FileStats.from_json(stats["after"]),
            notes=tuple(body.get("notes") or ()),
            tombstones_kept=int(body.get("tombstones_kept", 0)),  # reports kept before tables of current state
            tombstones_expired=int(body.get("tombstones_expired", 0)),
        )

    def lines(self) -> list[str]:
        compacted = self.compacted
        gave_way = f", gave way to {compacted.conflicts} other commits" if compacted.conflicts else ""
        return [
            f"maintained {self.uri} ({self.format}) in {self.seconds:.1f} s",
            f"  compacted {compacted.partitions} partitions: {compacted.files_removed} files into "
            f"{compacted.files_added} ({compacted.bytes_rewritten / MIB:.1f} MiB rewritten){gave_way}",
            f"  expired {self.versions_expired} versions; archived {self.markers_archived} batch markers first",
            f"  removed {self.orphans_removed} orphan files ({self.orphan_bytes / MIB:.1f} MiB)",
            *(
                [f"  tombstones: {self.tombstones_expired} expired, {self.tombstones_kept} kept"]
                if self.tombstones_kept or self.tombstones_expired
                else []
            ),
            f"  files: {self.before.files} -> {self.after.files}, mean "
            f"{self.before.mean_file_bytes / MIB:.2f} -> {self.after.mean_file_bytes / MIB:.2f} MiB",
            *(f"  note: {note}" for note in self.notes),
        ]


def keep(report: MaintenanceReport, bookkeeping: Place) -> None:
    """Keep ``report`` as the output's last maintenance."""
    bookkeeping.write_text(LAST, json.dumps(report.to_json(), indent=1, sort_keys=True))


def last(bookkeeping: Place) -> MaintenanceReport | None:
    """The output's last maintenance, or None if it was never maintained."""
    text = bookkeeping.read_text(LAST)
    return MaintenanceReport.from_json(json.loads(text)) if text is not None else None


__all__ = ["LAST", "Compacted", "MaintenanceReport", "keep", "last"]
