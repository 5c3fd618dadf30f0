"""What only the delta sink does: the consumer's batch number, an app transaction that only grows."""

from __future__ import annotations

from pathlib import Path

from deltalake import DeltaTable

from kinesis_batch.output.delta import DeltaSink
from tests.output.support import commit_record, stage


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
