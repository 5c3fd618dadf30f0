"""A log file gone under a loaded Delta table is the table having moved (reload and decide
again), in either wording deltalake gives it, also through our translation (table of cases);
and a publish whose commit meets it, translated or not, reloads and lands the batch once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake.exceptions import DeltaError

from kinesis_batch.errors import DependencyError
from kinesis_batch.output.delta_log import log_gone
from tests.output.support import commit_record, read_rows, stage


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
        (DeltaError("Generic DeltaTable error: Schema error: no field named x"), False),
        (ValueError("Invalid table version: 6"), False),  # not deltalake's
    ],
)
def test_a_log_file_gone_is_the_table_moving_in_either_wording(error: BaseException, gone: bool) -> None:
    assert log_gone(error) is gone


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
    from kinesis_batch.output.delta import DeltaSink

    sink = DeltaSink(str(tmp_path / "t"), app="kinesis-batch-tests", stream="s")
    sink.prepare()
    record = commit_record("b-1")
    files = stage(sink, record)
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
