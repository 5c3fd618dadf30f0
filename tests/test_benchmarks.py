"""The benchmarks' --quick forms run in CI (make test-benchmarks, not make test) so they cannot
rot. They print figures; this checks they ran to the end and drained (or published) everything,
never how fast (a slow machine is not a bug)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runs import REPO

FORMAT_ROW = r"\| {kind} +\| +5,000 \|"  # a row of throughput's table per output, every record drained


# each starts its endpoints and Spark
pytestmark = [pytest.mark.processes, pytest.mark.benchmarks, pytest.mark.isolated("a benchmark")]

#: What the suite runs beyond --quick: the smallest run that still goes through every path, since
#: the test proves that the benchmark runs, not what it measures (each prints its figures by hand,
#: benchmarks/README.md). Throughput into parquet only (each format it writes is one more Spark
#: start; the table formats are tested elsewhere); the job runs on the session's environment archive.
RECORDS = 5_000
EXTRA = {
    "throughput": ("--formats", "parquet", "--records", str(RECORDS)),
    "routed": ("--records", str(RECORDS)),
    "fleet": ("--streams", "3", "--many", "6", "--job-runs", "2"),
}
ON_THE_ARCHIVE = ("job_run", "fleet")


def run_benchmark(name: str, archive: Path | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--quick", *EXTRA.get(name, ()),
         *(("--archive", str(archive)) if archive else ())],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=540,
        start_new_session=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    return done.stdout


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("name", "says"),
    [
        (
            "throughput",
            (
                r"5,000 records: kinesis-batch / raw = [\d.]+ without start-up",
                FORMAT_ROW.format(kind="parquet"),
                # typed JSON beside raw (every record a row, every event_time a timestamp), and users' path
                r"\| json +\| fast +\| +5,000 \| +[\d,]+ \| +[\d.]+ \| +[\d.]+ \|",
                r"json, 5,000 records: users' path = raw landing [\d.]+ s \+ from_json job [\d.]+ s",
            ),
        ),
        (
            "read_limit",
            (
                r"\| grouped \(default\) \| 2 \| [\d.]+ \| [\d,]+ \| [\d.]+ \| [\d.]+ to [\d.]+ "
                r"\| \d+ of \d+ \([\d.]+%\) \| \d+% \|",
            ),
        ),
        (
            "memory",
            (
                r"peak at 4N / peak at N: driver [\d.]+, jvm [\d.]+, python worker [\d.]+",
                r"typed json: largest Python worker [\d,]+ MiB at N, [\d,]+ MiB at 4N: 4N / N [\d.]+",
            ),
        ),
        # Both parses gave the same page (the benchmark asserts it).
        (
            "page_parse",
            (
                r"\| parse: botocore, our timestamps \(JSON\), before \| [\d.]+ \| [\d.]+ \|",
                r"\| parse: msgspec, typed \(JSON\), the fast path \| [\d.]+ \| [\d.]+ \|",
                r"\| parse: cbor2 \(CBOR\), then columns \| [\d.]+ \| [\d.]+ \|",
                r"\| rows: columns at once \| [\d.]+ \| [\d.]+ \|",
            ),
        ),
        # CPU by kind of process, at start-up and at the margin: every record landed (the benchmark asserts it).
        (
            "process_cpu",
            (
                r"\| new, raw \| start-up \(64 records\), CPU s \|( [\d.]+ \|){4} \*\*[\d.]+\*\* \|",
                r"\| new, raw \| margin, CPU s per GiB \|( -?[\d.]+ \|){4} \*\*-?[\d.]+\*\* "
                r"\| [\d.]+ \(5,000 records\) \|",
            ),
        ),
        # Each run read every record put before it (the benchmark asserts it).
        ("bookkeeping", (r"DynamoDB calls per shard: [\d.]+ the first run, [\d.]+ a later one",)),
        ("planning", (r"history: 550 shards[\s\S]*time per shard at 2x the leases / at 1x: [\d.]+",)),
        # Each batch is checked from the output alone: committed() and last_batch() give it back,
        # the table names all its files, the format's reader returns all its rows.
        (
            "commit",
            (
                r"growth 80 vs 20 files, publish: ",
                r"every batch committed with all its files and rows: 10 of 10",
            ),
        ),
        # Every event a row, and as many tables got rows as routed to (the benchmark asserts it).
        (
            "routed",
            (
                r"\| 20 tables \| 20 \| 5,000 \| [\d,]+ \| [\d.]+ \|",
                r"20 tables / 1 table: [\d.]+x \(target: at most 1.5x\)",
                r"publish step: 1 tables [\d.]+ s, 20 tables [\d.]+ s",
            ),
        ),
        # After each batch both tables hold the same keys at the same versions (the benchmark asserts it).
        (
            "changes",
            (
                r"\| delta-local \| 16,000 \| 1,000 \| [\d.]+ \| [\d.]+ \| [\d.]+ \|",
                r"\| iceberg-local \| +[\d.]+x \| +[\d.]+x \|",
                r"every batch left both tables with the same keys at the same versions: 8",
            ),
        ),
        # The same, end to end: each path's processes on the local stack; after each batch both tables
        # hold the keys and versions sent (the benchmark asserts it).
        (
            "changes_runs",
            (
                r"\| delta-local \| 4,000 \| 1,000 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|",
                r"every batch left both tables with the keys and versions sent: 1",
            ),
        ),
        # The read step as a job run on the EMR Serverless stand-in, beside local Spark: both read every record.
        (
            "job_run",
            (
                r"\| EMR Serverless job run \(stand-in\) \| [\d.]+ \| [\d.]+ \| [\d.]+ \|",
                r"both read 2,000 records: 2,000 and 2,000",
            ),
        ),
        # A fleet of small streams, each its own run and then one group run: both read every record.
        (
            "fleet",
            (
                r"\| 3 single runs, 4 at a time \| [\d.]+ \| [\d.]+ \| [\d,]+ \| 3 \| 600 \|",
                r"\| one group run of 3 \| [\d.]+ \| [\d.]+ \| [\d,]+ \| 1 \| 600 \|",
                r"both read 600 records: 600 and 600",
                r"6 streams in 4 groups at once: the first run .* an hour with nothing new .* [\d.]+ s",
                r"the same hour behind AWS's own control-plane limits: [\d.]+ s, so the limits cost -?[\d.]+ s; "
                r"\d+ throttles",
                # every read a job run on the EMR Serverless stand-in: 2 job runs against the group's 1
                r"\| 2 single runs, 4 at a time \| [\d.]+ \| [\d.]+ \| 2 \| [\d.]+ \| 400 \|",
                r"\| one group run of 2 \| [\d.]+ \| [\d.]+ \| 1 \| [\d.]+ \| 400 \|",
                r"the group on EMR Serverless: [\d.]+ of the billed vCPU-hours",
            ),
        ),
        # DuckDB counted the same rows in each layout (the benchmark asserts it) and maintain compacted.
        (
            "tables",
            (
                r"\| delta-local +\| by event day, after maintain +\| +1 \|",
                r"\| iceberg-local +\| by event day, after maintain +\| +1 \|",
                r"iceberg-local: one-day count \(600 of 600 rows\) [\d.]+x faster",
            ),
        ),
    ],
)
def test_the_quick_form_of_each_benchmark_runs_to_its_figures(
    name: str, says: tuple[str, ...], request: pytest.FixtureRequest
) -> None:
    archive = request.getfixturevalue("environment_archive_file") if name in ON_THE_ARCHIVE else None
    out = run_benchmark(name, archive)
    for pattern in says:
        assert re.search(pattern, out), f"{name} did not print {pattern!r}:\n{out[-3000:]}"
