"""A run reads its whole plan in one Spark job, a group of shards per task: a child is read as
soon as its parents reached SHARD_END, not after unrelated shards; parents still commit first; a
lease lost mid-read cancels the job at once; an error inside a task reaches the caller as the
library's own error. Against the real local endpoints and the shared Spark session."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from devkit.limits_proxy import LimitsProxy, ShardLimits
from devkit.stack import LocalStack

from kinesis_batch import LeaseLostError
from kinesis_batch.aws import kinesis_client
from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.cli import main
from kinesis_batch.config import RunConfig
from kinesis_batch.output.parquet import ParquetSink
from kinesis_batch.parsers import default_table
from kinesis_batch.run import CatchUpRun
from kinesis_batch.spark import job
from tests.runs import Thief, assert_exactly_once, read_output
from tests.streams import StreamFactory, merge, open_shards, put, put_kib, split

KIB = 1024
LIMITS = ShardLimits.scaled(bytes_per_second=64 * KIB)  # a 1 KiB record costs 1/64 s of a shard


def test_a_diamond_is_read_without_waiting_for_an_unrelated_slow_shard_and_parents_commit_first(
    stack: LocalStack, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    with LimitsProxy(stack.kinesis["kinesalite"].url, limits=LIMITS) as proxy:
        kinesis = kinesis_client(endpoint_url=proxy.url)
        name = streams.create(shards=2)
        slow, top = sorted(open_shards(kinesis, name), key=lambda s: s.starting_hash_key)
        # The slow shard: a 320 KiB page, then 5 s before the next one may be read.
        sent = put_kib(kinesis, name, 400, hash_key=slow.starting_hash_key)
        sent += put(kinesis, name, 10, key_prefix="top")  # hash keys of "top-*" land in either shard
        split(kinesis, name, top)
        left, right = sorted(
            (s for s in open_shards(kinesis, name) if s.parent_shard_id), key=lambda s: s.starting_hash_key
        )
        sent += put(kinesis, name, 10, start=len(sent), key_prefix="mid")
        merge(kinesis, name, left, right)
        (bottom,) = [s for s in open_shards(kinesis, name) if s.adjacent_parent_shard_id]
        sent += put(kinesis, name, 10, start=len(sent), key_prefix="end")

        config = RunConfig.of(
            stream=name, output=str(tmp_path / "out"), worker_id="w", lease_seconds=30, read_limits=f"5,{64 * KIB}"
        )
        report = CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark).run()
        stats = proxy.stats()

    assert report.published and report.records == len(sent)
    assert_exactly_once(read_output(tmp_path / "out"), sent)
    # The grandchild of the diamond was read while the unrelated shard was still being read.
    assert stats[bottom.shard_id].first_call < stats[slow.shard_id].last_call - 2.0, stats
    assert stats[slow.shard_id].throttled == 0
    # Parents first: in the commit record and in the order the checkpoints moved.
    order = [commit.shard_id for commit in report.shards]
    assert order.index(top.shard_id) < order.index(left.shard_id) < order.index(bottom.shard_id)
    moved = {e.lease_key: e.committed_at for e in HistoryTable(dynamodb, default_table(name)).for_run(report.run_id)}
    assert moved[top.shard_id] <= moved[left.shard_id] <= moved[bottom.shard_id]


@pytest.mark.contract("spark", why="this PySpark's job cancellation")
def test_a_lease_lost_mid_read_cancels_the_spark_job_at_once_and_publishes_nothing(
    stack: LocalStack, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    with LimitsProxy(stack.kinesis["kinesalite"].url, limits=LIMITS) as proxy:
        kinesis = kinesis_client(endpoint_url=proxy.url)
        name = streams.create(shards=1)
        put_kib(kinesis, name, 2_000, hash_key=0)  # 26 s of reading at 64 KiB/s
        (shard,) = open_shards(kinesis, name)
        config = RunConfig.of(
            stream=name, output=str(tmp_path / "out"), worker_id="w", lease_seconds=10, read_limits=f"5,{64 * KIB}"
        )
        run = CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark)

        with Thief(dynamodb, name, shard.shard_id, ready=lambda: shard.shard_id in proxy.stats()) as thief:
            started = time.monotonic()
            with pytest.raises(LeaseLostError) as raised:
                run.run()
            seconds = time.monotonic() - started

    assert thief.took

    message = str(raised.value)
    assert f"lost the leases of {shard.shard_id} to thief while reading; nothing was published" in message, message
    assert seconds < 15, f"the job went on for {seconds:.1f} s after the lease was lost (reading takes 26 s)"
    assert not spark.session.sparkContext.statusTracker().getActiveJobsIds(), "the Spark job is still running"
    assert ParquetSink(tmp_path / "out").published_batches() == []


def test_an_error_inside_a_task_ends_the_run_with_its_own_one_line_message_and_exit_code(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    put(kinesis, name, 20)
    run_job = job.ReadJob.run

    def stream_deleted_mid_run(self: Any, *args: Any) -> None:
        kinesis.delete_stream(StreamName=name)
        kinesis.get_waiter("stream_not_exists").wait(StreamName=name, WaiterConfig={"Delay": 0.2})
        run_job(self, *args)

    monkeypatch.setattr(job.ReadJob, "run", stream_deleted_mid_run)
    code = main(["run", "--stream", name, "--output", str(tmp_path / "out"), "--read-limits", "none"],
                spark=lambda: spark)  # fmt: skip

    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("kinesis-batch:")]
    assert code == 2
    assert len(lines) == 1 and f"stream {name!r} or shard shardId-" in lines[0] and "does not exist" in lines[0], lines
    assert "PythonException" not in lines[0]
