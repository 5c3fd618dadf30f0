"""What a maintenance run did: kept as JSON in the output's bookkeeping and read back whole (a
report kept before tables of current state too), and said in lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kinesis_batch.maintenance.report import LAST, Compacted, MaintenanceReport, keep, last
from kinesis_batch.output.datafiles import MIB, FileStats
from kinesis_batch.storage.place import Place

STARTED = datetime(2026, 11, 29, 3, tzinfo=UTC)


def report(**more: object) -> MaintenanceReport:
    values: dict[str, object] = {
        "maintenance_id": "m-1", "format": "delta", "uri": "s3://lake/orders",
        "started_at": STARTED, "finished_at": STARTED + timedelta(seconds=12.5),
        "compacted": Compacted(partitions=3, files_removed=40, files_added=3, bytes_rewritten=96 * MIB, conflicts=1),
        "markers_archived": 7, "versions_expired": 20, "orphans_removed": 2, "orphan_bytes": MIB,
        "before": FileStats(43, 100 * MIB, 5, 3, 40, 96 * MIB), "after": FileStats(6, 100 * MIB, 5, 3, 3, 96 * MIB),
        "notes": ("a note",),
    } | more  # fmt: skip
    return MaintenanceReport(**values)  # type: ignore[arg-type]


def test_a_kept_report_reads_back_whole(tmp_path: Path) -> None:
    bookkeeping = Place(str(tmp_path))
    assert last(bookkeeping) is None, "never maintained"
    made = report(tombstones_kept=4, tombstones_expired=9)
    keep(made, bookkeeping)
    assert last(bookkeeping) == made
    assert json.loads((tmp_path / LAST).read_text())["seconds"] == 12.5


def test_a_report_kept_before_tombstones_were_counted_still_reads(tmp_path: Path) -> None:
    body = report().to_json()
    del body["tombstones_kept"], body["tombstones_expired"]
    assert MaintenanceReport.from_json(body) == report()


def test_compactions_add_up() -> None:
    one, two = Compacted(1, 10, 1, 5, 0), Compacted(2, 20, 2, 7, 3)
    assert one + two == Compacted(3, 30, 3, 12, 3) and one + Compacted() == one


def test_its_lines_say_what_it_did() -> None:
    lines = report(tombstones_expired=9).lines()
    assert lines[0] == "maintained s3://lake/orders (delta) in 12.5 s"
    assert lines[1] == "  compacted 3 partitions: 40 files into 3 (96.0 MiB rewritten), gave way to 1 other commits"
    assert "  tombstones: 9 expired, 0 kept" in lines and lines[-1] == "  note: a note"
    assert not any("tombstones" in line for line in report().lines()), "nothing to say of tombstones"
    assert "  files: 43 -> 6, mean 2.33 -> 16.67 MiB" in lines
