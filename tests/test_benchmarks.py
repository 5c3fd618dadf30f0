"""The benchmarks' --quick forms run in CI so they cannot rot. They print figures; this checks
they ran to the end and drained every record, never how fast (a slow machine is not a bug)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.runs import REPO


def run_benchmark(name: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--quick"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    return done.stdout


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("throughput", r"20,000 records: kinesis-batch / raw = [\d.]+ without start-up"),
        ("read_limit", r"16,000 records of 1 KiB in .*\n[\s\S]*throttled calls: \d+ of \d+"),
        ("memory", r"peak at 4N / peak at N: driver [\d.]+, jvm [\d.]+, python worker [\d.]+"),
        ("planning", r"history: 550 shards[\s\S]*time per shard at 2x the leases / at 1x: [\d.]+"),
    ],
)
def test_the_quick_form_of_each_benchmark_runs_to_its_figures(name: str, says: str) -> None:
    assert re.search(says, run_benchmark(name)), f"{name} did not print its figures"
