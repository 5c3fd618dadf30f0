"""`kinesis-batch plan` shows what a run would read, and reads, leases and creates nothing."""

from __future__ import annotations

import json

import pytest

from kinesis_batch import LeaseStore
from kinesis_batch.aws import dynamodb_client
from kinesis_batch.cli import main
from kinesis_batch.parsers import default_table
from tests.runs import diamond_stream
from tests.streams import StreamFactory


def test_plan_of_a_new_stream_shows_parent_first_waves_and_creates_nothing(
    kinesis,
    streams: StreamFactory,
    capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
) -> None:
    name = streams.create(shards=3)
    diamond_stream(kinesis, name, 20)

    assert main(["plan", "--stream", name, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    waves = {r["shard_id"]: r["wave"] for r in plan["ranges"]}
    assert len(waves) == 7  # 3 roots, 2 split children, 1 merge child, the diamond's merge child
    for shard_range in plan["ranges"]:
        assert all(waves[p] < shard_range["wave"] for p in shard_range["after_parents"])
        assert shard_range["start"] == "TRIM_HORIZON"
    assert max(waves.values()) == 2
    assert not LeaseStore(dynamodb_client(), default_table(name)).table_exists()

    assert main(["plan", "--stream", name]) == 0
    text = capsys.readouterr().out
    assert "7 shards to read, 0 finished" in text
    assert text.splitlines()[0].startswith("wave 0")


def test_plan_of_an_unknown_stream_is_one_clear_line(capsys: pytest.CaptureFixture[str], emulator: str) -> None:
    assert main(["plan", "--stream", "no-such-stream"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0]
