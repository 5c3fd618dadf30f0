"""A day of catch-up runs every four hours of a 16-shard stream into a day-partitioned output, then
``maintain``: for every format, locally and on S3 (moto). Maintenance leaves the same rows (by
key and count), at most one file per partition and target size, no old snapshot or version, no
orphan, and a status that still agrees with the checkpoints; the next run goes on from there."""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.maintenance import MaintainSettings, maintain
from kinesis_batch.maintenance.maintain import maintainer_of
from kinesis_batch.maintenance.plan import orphans
from kinesis_batch.output import Sink
from kinesis_batch.parsers import default_table
from kinesis_batch.run import CatchUpRun
from kinesis_batch.status import stream_status
from kinesis_batch.storage.place import Place
from tests.output.support import output_args, read_rows, run_config, sink_of
from tests.runs import assert_exactly_once
from tests.streams import StreamFactory, put

KINDS = [("parquet", "local"), ("delta", "local"), ("delta", "s3"), ("iceberg", "local"), ("iceberg", "s3")]
RUNS, SHARDS, PER_RUN = 6, 16, 192  # a day every four hours: as many records as hourly runs put
TARGET = MaintainSettings(target_file_mb=1, retain_hours=0)  # a small target: files roll in this test too


def four_hours_later() -> float:
    return time.time() + 4 * 3600


def row_keys(rows: dict[str, list[Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(zip(rows["shard_id"], rows["sequence_number"], rows["sub_sequence_number"], strict=True))


def leave_an_orphan(sink: Sink) -> Place:
    """What a crashed writer leaves: a file in a batch folder nobody stages or references."""
    if sink.format == "parquet":
        place = Place(str(Path(sink.uri) / "_discarded" / "crashed-run"))
    else:
        root = sink.root() if callable(sink.root) else sink.root  # type: ignore[attr-defined]
        place = root.child("data", "crashed-run", "arrival_day=2026-11-24")
    place.write_text("part-crashed.parquet", "half a file")
    return place


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_a_day_of_runs_every_four_hours_then_maintain_keeps_every_row_in_few_files_and_nothing_old(
    format: str, where: str, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    name = streams.create(shards=SHARDS)
    output = output_args(format, where, tmp_path, monkeypatch)
    config = run_config(name, output, "hourly", read_limits="none")
    sent: list[str] = []
    for _ in range(RUNS):
        sent += put(kinesis, name, PER_RUN, start=len(sent), keys=64)
        report = CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark).run()
        assert report.published
    sink = sink_of(output, app=default_table(name), stream=name)
    before = read_rows(sink)
    assert_exactly_once(before, sent)
    files_before = sink.data_files()
    assert len(files_before) >= RUNS, "at least a file per run"
    orphan = leave_an_orphan(sink)

    report = maintain(sink, TARGET, clock=four_hours_later)

    after = read_rows(sink)
    assert row_keys(after) == row_keys(before), "maintenance changed the rows"
    assert_exactly_once(after, sent)
    by_partition: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for file in sink.data_files():  # parquet folders: per batch folder, the only place a row can be
        by_partition[(file.group, file.partition)].append(file.bytes)
    for partition, sizes in by_partition.items():
        assert len(sizes) <= max(1, math.ceil(sum(sizes) / TARGET.target_bytes)), f"{partition}: {sizes}"
    assert report.after.files < len(files_before)
    assert orphan.read_text("part-crashed.parquet") is None, "the crashed writer's file is still there"
    leftovers = orphans(
        maintainer_of(sink, "check").survey(), now_ms=int(four_hours_later() * 1000), retain=TARGET.retain
    )
    assert leftovers == [], "files no commit references are left"
    if format == "iceberg":
        table = sink.catalog.load_table(sink.identifier)  # type: ignore[attr-defined]
        assert len(table.snapshots()) == 1, "old snapshots were kept"
    if format == "delta":
        log = sink.root.child("_delta_log").list()  # type: ignore[attr-defined]
        assert sum(entry.endswith(".json") for entry in log) <= 2, f"old versions were kept: {log}"
    status = stream_status(kinesis, dynamodb_client(), name, default_table(name), output=sink).output
    assert status and status.disagreeing_shards == () and status.last_batch is not None
    assert status.files and status.files.last_maintenance
    assert status.files.last_maintenance.maintenance_id == report.maintenance_id

    more = put(kinesis, name, PER_RUN, start=len(sent))
    report_after = CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark).run()
    assert report_after.records == len(more)
    assert_exactly_once(read_rows(sink), sent + more)
