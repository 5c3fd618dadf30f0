"""A log file gone under a loaded Delta table is the table having moved (reload and decide
again), in each wording deltalake gives it, also through our translation (table of cases); a
publish whose commit meets it, translated or not, reloads and lands the batch once; and each
look-up handed a table loaded before maintenance cleaned up its log (a checkpoint, the entries
before it deleted) loads again and answers as on a fresh load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake.exceptions import DeltaError

from kinesis_batch.errors import DependencyError
from kinesis_batch.maintenance import MaintainSettings, maintain
from kinesis_batch.output.delta_log import log_gone
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile
from tests.output.support import commit_record, read_rows, stage

pytestmark = pytest.mark.contract("tables", why="each format's publish and read-back with these table libraries")


def translated(cause: BaseException) -> DependencyError:
    try:
        raise DependencyError(f"cannot merge into the Delta table at s3://b/t: {cause}") from cause
    except DependencyError as exc:
        return exc


@pytest.mark.parametrize(
    ("error", "gone"),
    [
        (DeltaError("Object at location s3://b/t/_delta_log/00000000000000000006.json not found"), True),
        (DeltaError("Generic DeltaTable error: Invalid table version: 6"), True),  # a commit's conflict check
        (translated(DeltaError("Invalid table version: 6")), True),
        (  # deltalake on S3: object_store's NotFound, as Python's FileNotFoundError
            FileNotFoundError("Object at location t/_delta_log/00000000000000000004.json not found: 404 Not Found"),
            True,
        ),
        (translated(FileNotFoundError("Object at location t/_delta_log/00000000000000000004.json not found")), True),
        (FileNotFoundError("Object at location t/data/b-1/part-0.parquet not found"), False),  # a data file
        (DeltaError("Generic DeltaTable error: Schema error: no field named x"), False),
        (ValueError("Invalid table version: 6"), False),  # not deltalake's
    ],
)
def test_a_log_file_gone_is_the_table_moving_in_either_wording(error: BaseException, gone: bool) -> None:
    assert log_gone(error) is gone


def staged_batch(tmp_path: Path) -> tuple[Any, CommitRecord, list[StagedFile]]:
    """A new Delta table and batch b-1 staged for it (3 rows of each of 2 shards)."""
    from kinesis_batch.output.delta import DeltaSink

    sink = DeltaSink(str(tmp_path / "t"), app="kinesis-batch-tests", stream="s")
    sink.prepare()
    record = commit_record("b-1")
    return sink, record, stage(sink, record)


@pytest.mark.parametrize(
    "raised",
    [
        lambda: DeltaError("Generic DeltaTable error: Invalid table version: 6"),
        lambda: translated(DeltaError("Invalid table version: 6")),  # how a merge's commit raises it
    ],
    ids=["deltalake's", "translated"],
)
def test_a_publish_whose_commit_meets_a_cleaned_log_reloads_and_lands_once(
    raised: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink, record, files = staged_batch(tmp_path)
    real, met = sink._commit, []

    def meets_a_cleaned_log_once(*args: Any, **kwargs: Any) -> bool:
        if not met:
            met.append(True)
            raise raised()
        return real(*args, **kwargs)

    monkeypatch.setattr(sink, "_commit", meets_a_cleaned_log_once)
    assert sink.publish(record, files) is True
    assert met and sink.committed("b-1") is not None
    assert len(read_rows(sink)["shard_id"]) == 6  # 3 rows of each of 2 shards, once


@pytest.mark.parametrize("look_up", ["committed", "discard", "publish"])
def test_a_look_up_handed_a_table_whose_log_was_cleaned_under_its_load_loads_again(
    look_up: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink, record, files = staged_batch(tmp_path)
    assert sink.publish(record, files)
    stale, witness = sink._load(), sink._load()  # deltalake reads their app transactions lazily
    for number in range(3):  # commits after theirs, then maintenance: a checkpoint, the log before it gone
        later = commit_record(f"later-{number}")
        assert sink.publish(later, stage(sink, later))
    maintain(sink, MaintainSettings(retain_hours=0))
    with pytest.raises(DeltaError) as met:  # what a read through such a handle meets
        witness.transaction_version(sink.app_id("b-1"))
    assert log_gone(met.value)

    looking = type(sink)(sink.uri, app=sink.app, stream="s")
    real, handed = looking._load, []

    def stale_first(**kwargs: Any) -> Any:
        handed.append("stale" if not handed else "fresh")
        return stale if handed == ["stale"] else real(**kwargs)

    monkeypatch.setattr(looking, "_load", stale_first)
    answers = {
        "committed": lambda: looking.committed("b-1") == record,
        "discard": lambda: looking.discard("b-1") is False,  # published: the discard gives way
        "publish": lambda: looking.publish(record, files) is False,  # already in: not again
    }
    assert answers[look_up]()
    assert handed[:2] == ["stale", "fresh"]
    assert len(read_rows(looking)["shard_id"]) == 4 * 6  # b-1 and the three later batches, once each
