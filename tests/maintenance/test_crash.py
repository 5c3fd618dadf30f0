"""kill -9 of ``kinesis-batch maintain`` at every step of it, for every format: the table stays
readable with every row once, every batch as committed as it was, and a re-run finishes the
work (one file per partition, nothing old, no orphan).

The crashing maintenances are real processes killed with -9 at their step (tests.faultpoints),
started side by side; the re-runs are in this process, two hours later by their clock, so that
what the dead one left is old enough to be called an orphan.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.maintenance import MaintainSettings, maintain
from kinesis_batch.maintenance.maintain import maintainer_of
from kinesis_batch.maintenance.plan import orphans
from kinesis_batch.output import CommitRecord, Sink
from kinesis_batch.output.datafiles import FileStats
from tests.crashes import died_at, killed_at_exit, start_cli
from tests.matrices import MAINTENANCE_CRASH
from tests.output.support import commit_record, output_args, read_rows, sink_of, stage

#: (format, where, steps): every pair of step, format and place (tests.matrices.MAINTENANCE_CRASH),
#: the steps of one format and place side by side in one test.
CRASH_KINDS = [(format, where, steps) for (format, where), steps in MAINTENANCE_CRASH.by("format", "where")]
LATER = MaintainSettings(retain_hours=0)
APP = "kinesis-batch-tests"

pytestmark = [pytest.mark.processes, pytest.mark.isolated("kill -9")]  # maintain runs as a process of its own, killed


def two_hours_later() -> float:
    return time.time() + 2 * 3600


@dataclass
class Crash:
    step: str
    output: tuple[str, ...]
    sink: Sink
    records: dict[str, CommitRecord | None]
    rows: Counter[tuple[Any, ...]]
    process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        args = ("maintain", *self.output, "--retain-hours", "0")
        self.process = start_cli(*args, fault=("crash", self.step))
        return self.process


def keys(rows: dict[str, list[Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(zip(rows["shard_id"], rows["data"], rows["batch_id"], strict=True))


def a_table_of_small_files(output: tuple[str, ...]) -> tuple[Sink, dict[str, CommitRecord | None]]:
    sink = sink_of(output, app=APP)
    sink.prepare()
    records: dict[str, CommitRecord | None] = {}
    for number in range(4):
        record = commit_record(f"b-{number}")
        assert sink.publish(record, stage(sink, record))
        records[record.batch_id] = record
    late = commit_record("discarded")
    stage(sink, late)
    assert sink.discard("discarded")
    records["discarded"] = None
    return sink, records


def assert_whole(crash: Crash, sink: Sink) -> None:
    """Readable, every row once, every batch as committed (or not) as it was."""
    assert keys(read_rows(sink)) == crash.rows, f"rows changed by a crash at {crash.step}"
    assert {batch: sink.committed(batch) for batch in crash.records} == crash.records


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("format", "where", "steps"), CRASH_KINDS, ids=[f"{f}-{w}" for f, w, _ in CRASH_KINDS])
def test_kill_9_at_any_step_of_maintain_then_a_rerun_leaves_the_table_whole_and_maintained(
    format: str,
    where: str,
    steps: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    subtests: pytest.Subtests,
) -> None:
    crashes = []
    for step in steps:
        output = output_args(format, where, tmp_path, monkeypatch)
        sink, records = a_table_of_small_files(output)
        crashes.append(Crash(step, output, sink, records, keys(read_rows(sink))))
    processes: list[subprocess.Popen[str]] = []
    with killed_at_exit(processes):
        processes.extend(crash.start() for crash in crashes)  # side by side
        for crash in crashes:
            with subtests.test(step=crash.step):
                died_at(crash.process, crash.step)
                assert_whole(crash, sink_of(crash.output, app=APP))

                rerun = maintain(sink_of(crash.output, app=APP), LATER, clock=two_hours_later)

                sink = sink_of(crash.output, app=APP)
                assert_whole(crash, sink)
                stats = FileStats.of(sink.data_files())
                assert stats.files == (4 if format == "parquet" else 1), "the re-run compacted what was left"
                survey = maintainer_of(sink, "check").survey()
                assert orphans(survey, now_ms=int(two_hours_later() * 1000), retain=LATER.retain) == []
                assert rerun.after.files == stats.files


def test_maintain_told_to_stop_stops_between_its_steps_with_one_line_and_a_rerun_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while a compaction commits (``compacting``): the compaction lands, the maintenance
    stops before expiring, exit 143 and one line; a re-run does the rest."""
    output = output_args("delta", "local", tmp_path, monkeypatch)
    sink = sink_of(output, app=APP)
    sink.prepare()
    for number in range(3):
        record = commit_record(f"b-{number}")
        sink.publish(record, stage(sink, record))
    rows = read_rows(sink)
    process = start_cli("maintain", *output, "--retain-hours", "0", fault=("sigterm", "compacting"))
    with killed_at_exit([process]):
        _, stderr = process.communicate(timeout=120)
    lines = stderr.splitlines()
    assert process.returncode == 143, stderr[-2000:]
    assert lines[-1].startswith(f"kinesis-batch: error: interrupted by SIGTERM: maintenance of {sink.uri} stopped ")
    assert "after compacting; what it did stays, a re-run does the rest" in lines[-1] and "Traceback" not in stderr
    assert FileStats.of(sink.data_files()).files == 1, "the compaction under way landed"
    assert read_rows(sink) == rows
    report = maintain(sink, LATER, clock=two_hours_later)
    assert report.versions_expired > 0 and read_rows(sink) == rows
