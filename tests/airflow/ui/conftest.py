"""A stream for the UI tests to look at, caught in the middle of a run: its consumer decodes JSON
events, and one record in ten does not decode (a dead letter)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from devkit import demo

from kinesis_batch.config import RunConfig
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.run import CatchUpRun
from tests.runs import diamond_stream
from tests.streams import StreamFactory, put


def event(i: int) -> bytes:
    """A click event; every tenth record is cut short (it does not decode)."""
    whole = json.dumps({"click": i, "page": f"/products/{i % 7}", "user": {"id": f"u{i % 13}"}}).encode()
    return whole[:9] if i % 10 == 3 else whole


@pytest.fixture
def demo_output() -> Iterator[Path]:
    """An output where ``make demo`` puts its own (the README's picture shows it)."""
    workdir = Path(tempfile.mkdtemp(prefix="kinesis-batch-demo-"))
    yield workdir / "output"
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def stream_mid_run(kinesis: Any, dynamodb: Any, streams: StreamFactory, demo_output: Path, spark: Any) -> str:
    """The demo's stream with a diamond history: run "one" committed everything, run "two" the
    records that arrived next, then more arrived and run "three" took the leases and marked them
    with its batch (it is reading now). Its output is ``demo_output``."""
    name = streams.create(shards=3, name=demo.STREAM)  # the README's picture shows the demo's stream
    diamond_stream(kinesis, name, 20, payload=event)

    def run(worker: str, run_id: str) -> CatchUpRun:
        decoding = DecodeSettings(decode="json")
        config = RunConfig.of(
            stream=name, output=str(demo_output), worker_id=worker, lease_seconds=600, **decoding.to_json()
        )
        return CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark, run_id=run_id)

    run("worker-one", "run-one").run()
    put(kinesis, name, 30, start=1000, payload=event)
    run("worker-one", "run-two").run()
    put(kinesis, name, 40, start=2000, payload=event)
    run("worker-two", "run-three").start()
    return name
