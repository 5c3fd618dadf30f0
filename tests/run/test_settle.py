"""Settling a batch a crashed run left: when a run fails to settle it, the lease keeps how often
and why, the run still releases its leases, ``status`` says it on a line of its own until a run
settles the batch, and then says nothing more of it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import cli
from kinesis_batch.errors import DependencyError
from kinesis_batch.output.parquet import ParquetSink
from tests.run.test_catch_up import CrashingRun, SimulatedCrash, assert_settled, catch_up, leases
from tests.streams import StreamFactory, put


def test_a_batch_that_fails_to_settle_is_counted_on_its_lease_and_said_by_status_until_it_settles(
    kinesis: Any,
    dynamodb: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 20)
    output = tmp_path / "out"
    run = dict(kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark)
    crashed = catch_up(name, output, "crasher", lease_seconds=10, run_class=CrashingRun, crash_at="prepared", **run)
    with pytest.raises(SimulatedCrash):
        crashed.run()

    def status() -> tuple[dict[str, Any], str]:
        assert cli.main(["status", "--stream", name, "--json"]) == 0, capsys.readouterr().err
        (shard,) = json.loads(capsys.readouterr().out)
        assert cli.main(["status", "--stream", name]) == 0
        return shard, capsys.readouterr().out

    def denied(self: ParquetSink, batch_id: str, *, fence: bool = True) -> bool:
        raise DependencyError(f"cannot delete the staging of {batch_id}: 403 Forbidden")

    later = lambda: time.time() + 60  # noqa: E731  # the crashed run's leases have lapsed
    with pytest.MonkeyPatch.context() as storage:
        storage.setattr(ParquetSink, "discard", denied)
        for attempt in (1, 2):
            with pytest.raises(DependencyError, match="403"):
                catch_up(name, output, f"recoverer-{attempt}", clock=later, **run).run()
            shard, text = status()
            assert (shard["pending_batch"], shard["lease_owner"]) == (crashed.run_id, None), shard
            assert shard["settle_failures"] == attempt and "403 Forbidden" in shard["settle_error"], shard
    assert f"pending batch {crashed.run_id} failed to settle 2 times" in text and "403 Forbidden" in text, text
    assert len([line for line in text.splitlines() if line.startswith("WARNING:")]) == 1, text

    assert catch_up(name, output, "recoverer-3", clock=later, **run).run().published
    shard, text = status()
    assert (shard["pending_batch"], shard["settle_failures"], shard["settle_error"]) == (None, 0, None), shard
    assert "failed to settle" not in text
    assert_settled(dynamodb, name)
    assert {lease.lease_owner for lease in leases(dynamodb, name).values()} == {None}
