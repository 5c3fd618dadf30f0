"""What only the delta sink does: the consumer's batch number, an app transaction that only
grows; a log cleaned up under a loaded table (deltalake reads it lazily) is a reload; appended
files' column statistics in their add actions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.output.delta import DeltaSink
from tests.output.support import commit_record, stage

pytestmark = pytest.mark.contract("tables", why="each format's publish and read-back with these table libraries")

GONE = "Kernel error: File not found: tables/t/_delta_log/00000000000000000003.json"


def test_every_commit_moves_the_consumers_batch_number_up_by_one(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path / "t"), app="kinesis-batch-clicks", stream="clicks")
    sink.prepare()
    for batch in ("b-1", "b-2"):
        record = commit_record(batch)
        sink.publish(record, stage(sink, record))
    stage(sink, commit_record("b-3"))
    sink.discard("b-3")  # a fenced discard is a commit of ours too

    table = DeltaTable(sink.uri)
    assert table.transaction_version("kinesis-batch/kinesis-batch-clicks") == 3
    assert [table.transaction_version(sink.app_id(b)) for b in ("b-1", "b-2", "b-3")] == [1, 1, 0]
    numbers = [c.get("kinesis_batch.batch_number") for c in table.history() if "kinesis_batch.batch_id" in c]
    assert numbers == ["3", "2", "1"], "the commit metadata repeats the number, newest first"


class CleanedUnder:
    """A loaded table whose log a clean-up removed right after the load: its lazy look-ups fail
    as deltalake's do then."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)

    def transaction_version(self, app_id: str) -> int | None:
        raise DeltaError(GONE)


def cleaned_under_the_first_load(sink: DeltaSink, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """From now on, the first table ``sink`` loads has its log cleaned up under it; the loads."""
    loads: list[Any] = []
    load = sink._load

    def loading(**options: Any) -> Any:
        loads.append(load(**options))
        return CleanedUnder(loads[-1]) if len(loads) == 1 else loads[-1]

    monkeypatch.setattr(sink, "_load", loading)
    return loads


def test_a_log_cleaned_up_under_the_loaded_table_makes_publish_and_discard_reload_not_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = DeltaSink(str(tmp_path / "t"), app="kinesis-batch-clicks", stream="clicks")
    sink.prepare()
    record = commit_record("b-1")
    files = stage(sink, record)
    with monkeypatch.context() as patch:
        loads = cleaned_under_the_first_load(sink, patch)
        assert sink.publish(record, files) is True
        assert len(loads) == 2, "reloaded once"
    stage(sink, commit_record("b-2"))
    with monkeypatch.context() as patch:
        loads = cleaned_under_the_first_load(sink, patch)
        assert sink.discard("b-2") is True
        assert len(loads) == 2, "reloaded once"
    table = DeltaTable(sink.uri)
    assert [table.transaction_version(sink.app_id(b)) for b in ("b-1", "b-2")] == [1, 0]

    # A merge's error comes translated, raised from deltalake's: it is still the log gone.
    try:
        raise InvalidStateError("cannot merge into the Delta table") from DeltaError(GONE)
    except InvalidStateError as translated:
        assert sink._moved_under(translated)
    other = DeltaError("Kernel error: Generic delta kernel error: something else")
    assert not sink._moved_under(other) and not sink._moved_under(OSError("_delta_log/ not found"))


def test_appended_files_state_their_columns_bounds_so_a_filtered_read_skips_them(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path / "t"), app="kinesis-batch-clicks", stream="clicks")
    sink.prepare()
    day = datetime(2026, 11, 25, tzinfo=UTC)
    for number, batch in enumerate(("b-1", "b-2")):
        record = commit_record(batch)
        sink.publish(record, stage(sink, record, arrival=day + timedelta(days=number)))

    table = DeltaTable(sink.uri)
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    assert {a["min.batch_id"] for a in actions} == {"b-1", "b-2"}
    assert all(a["null_count.data"] == 0 for a in actions)
    dataset = table.to_pyarrow_dataset()
    second = pc.field("batch_id") == "b-2"
    assert len(list(dataset.get_fragments(filter=second))) == len(actions) // 2, "the first batch's files skipped"
    assert dataset.to_table(filter=second).num_rows == 6
    assert not list(dataset.get_fragments(filter=pc.field("sub_sequence_number") > 0)), "every file ruled out"
