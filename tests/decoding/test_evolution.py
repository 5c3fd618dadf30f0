"""Two runs of one consumer, on disjoint shards, each adding a different new field, publishing at
the same moment into one table: both columns, and every row exactly once."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.parsers import default_table
from kinesis_batch.run import CatchUpRun
from tests.output.support import output_args, read_rows, run_config, sink_of
from tests.streams import StreamFactory, open_shards, put_at_hash

KINDS = [("delta", "s3"), ("iceberg", "local")]


@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_two_runs_adding_different_fields_at_once_leave_both_columns_and_every_row_once(
    format: str,
    where: str,
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = streams.create(shards=2)
    first, second = sorted(open_shards(kinesis, name), key=lambda s: s.starting_hash_key)
    for i in range(40):  # the first shard's events have alpha, the second's beta
        put_at_hash(kinesis, name, json.dumps({"id": i, "alpha": f"a{i}"}).encode(), int(first.starting_hash_key))
        put_at_hash(kinesis, name, json.dumps({"id": 100 + i, "beta": i / 2}).encode(), int(second.starting_hash_key))
    output = output_args(format, where, tmp_path, monkeypatch)
    runs = []
    for worker, shard in (("one", first.shard_id), ("two", second.shard_id)):
        config = run_config(name, output, worker, read_limits="none", decode="json")
        run = CatchUpRun(config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: spark)
        run.checkpoints.create_checkpoint_store_if_not_exists()
        run.manager.ensure_leases(run.plan().new_leases)
        assert [lease.lease_key for lease in run.manager.take([shard]).acquired] == [shard]
        runs.append(run)
    for run in runs:  # each reads against the table as it is: neither field is in it yet
        run.start()
        run.read()

    barrier = threading.Barrier(2)
    published: dict[str, bool | Exception] = {}

    def publish(run: CatchUpRun) -> None:
        barrier.wait()
        try:
            published[run.config.worker_id] = run.publish()
        except Exception as exc:
            published[run.config.worker_id] = exc

    threads = [threading.Thread(target=publish, args=(run,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert published == {"one": True, "two": True}, published
    for run in runs:
        run.commit()
        run.finish()

    rows = read_rows(sink_of(output, app=default_table(name), stream=name))
    assert {"alpha", "beta"} <= set(rows)
    assert sorted(rows["id"]) == list(range(40)) + list(range(100, 140))
    by_id = dict(zip(rows["id"], zip(rows["alpha"], rows["beta"], strict=True), strict=True))
    assert by_id[3] == ("a3", None) and by_id[103] == (None, 1.5)
