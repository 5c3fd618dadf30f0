"""A ``kinesis-batch run`` told to stop: SIGINT (Ctrl-C, to its whole process group) or SIGTERM
(a ``kill``, an orchestrator) in the middle of its read, and SIGTERM while it publishes. Each
time the process ends within its --stop-timeout with exit 130 or 143 and one line, no
traceback, no lease held and no batch pending (a publish under way is committed); the next run
lands every record exactly once. A second signal ends a run at once, as a crash would, and a
run that does not stop in time is ended at its timeout: the next run settles either.

The signals come from the run's own fault points (tests.faultpoints): sent from inside a Spark
task while it reads (and then still reading, so only a real stop ends it), or from the driver
at ``staged``, where the publish step has begun. The runs of one output kind go side by side.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.output import Sink
from kinesis_batch.parsers import default_table
from tests.crashes import SUBPROCESS_ARGS, killed_at_exit, lease_owners, pending_batches, start_cli
from tests.openlineage.support import events, file_transport
from tests.output.support import output_args, read_rows, sink_of
from tests.runs import assert_exactly_once
from tests.scenarios.test_crash import catch_up
from tests.streams import StreamFactory, put

pytestmark = pytest.mark.isolated("a signal")

STOP_TIMEOUT = 30.0  # the default
LEASE_SECONDS = 10  # the shortest: the runs after a hard exit wait this out on their clock
RUN_ID = "stopped-batch"


@dataclass
class Stopped:
    """One run to stop: the fault (action, step), its stream and output, and its process."""

    action: str
    step: str
    stream: str
    sent: list[str]
    output: tuple[str, ...]
    sink: Sink
    extra: tuple[str, ...] = ()
    process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        args = ("run", "--stream", self.stream, *self.output, "--lease-seconds", str(LEASE_SECONDS), *self.extra)
        self.process = start_cli(
            *args, *SUBPROCESS_ARGS, "--worker-id", "stopped", "--run-id", RUN_ID, fault=(self.action, self.step)
        )
        return self.process

    def ended(self) -> tuple[int, list[str], float]:
        """(exit code, stderr's lines, seconds from the first signal to the end)."""
        assert self.process is not None
        _, stderr = self.process.communicate(timeout=300)
        ended = time.time()
        signalled = Path(tempfile.gettempdir(), f"kb-signalled-{self.process.pid}")
        assert signalled.exists(), f"no signal was sent:\n{stderr[-3000:]}"
        seconds = ended - signalled.stat().st_mtime
        signalled.unlink()
        return self.process.returncode, stderr.splitlines(), seconds


def a_run_to_stop(
    action: str, step: str, format: str, where: str, kinesis: Any, streams: StreamFactory, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, *extra: str,
) -> Stopped:  # fmt: skip
    name = streams.create(shards=2)
    sent = put(kinesis, name, 120)
    output = output_args(format, where, tmp_path, monkeypatch)
    return Stopped(action, step, name, sent, output, sink_of(output, app=default_table(name), stream=name), extra)


def assert_one_line(lines: list[str], says: str) -> str:
    """The run's error line: exactly one, the last, saying ``says``; no traceback."""
    text = "\n".join(lines)
    assert "Traceback" not in text, text[-3000:]
    errors = [line for line in lines if line.startswith("kinesis-batch: error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], text[-3000:]
    assert says in errors[0], errors[0]
    return errors[0]


#: Delta on S3, where a publish under way is a commit to a remote table: stopping is the same for
#: every format, and each format's discard of a batch is killed at every step in test_crash.py.
KINDS = [("delta", "s3")]
STOPS = [("sigint", "reading", 130), ("sigterm", "reading", 143), ("sigterm", "staged", 143)]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("format", "where"), KINDS, ids=[f"{f}-{w}" for f, w in KINDS])
def test_sigint_or_sigterm_stops_the_run_cleanly_and_the_next_run_lands_every_record_once(
    format: str, where: str, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, subtests: pytest.Subtests,
) -> None:  # fmt: skip
    runs = [
        a_run_to_stop(action, step, format, where, kinesis, streams, tmp_path, monkeypatch) for action, step, _ in STOPS
    ]
    lineage = tmp_path / "lineage.jsonl"  # the runs' OpenLineage events: a stop is an ABORT, valid
    for key, value in file_transport(lineage).items():
        monkeypatch.setenv(key, value)
    processes: list[subprocess.Popen[str]] = []
    with killed_at_exit(processes):
        processes.extend(run.start() for run in runs)  # side by side: their JVMs start at once
        for run, (action, step, code) in zip(runs, STOPS, strict=True):
            with subtests.test(action=action, step=step):
                exit_code, lines, seconds = run.ended()
                name = "SIGINT" if action == "sigint" else "SIGTERM"
                line = assert_one_line(lines, f"interrupted by {name}: batch {RUN_ID}")
                assert exit_code == code, "\n".join(lines[-20:])
                assert seconds < STOP_TIMEOUT, f"stopped {seconds:.1f} s after the signal"
                assert lease_owners(run.stream) == {}, "a lease stayed held"
                assert pending_batches(run.stream) == {}, "a batch stayed pending"
                if step == "reading":
                    assert "discarded before it was published" in line
                    assert read_rows(run.sink) == {}, "a stopped read published rows"
                    assert not run.sink.data(RUN_ID).exists(), "the discarded batch's files were left"
                else:  # the publish was under way: it finished, and its checkpoints moved
                    assert f"published ({len(run.sent)} records from 2 shards)" in line, line
                    assert run.sink.committed(RUN_ID) is not None
                ours = [e for e in events(lineage) if e["inputs"][0]["name"] == run.stream]
                if step == "reading":  # the run ended by the stop: ABORT, with its line
                    assert [e["eventType"] for e in ours] == ["START", "ABORT"], ours
                    assert ours[1]["run"]["facets"]["errorMessage"]["message"] in line
                else:  # its batch landed before the stop was honoured: that is what it did
                    assert [e["eventType"] for e in ours] == ["START", "COMPLETE"], ours
                    assert ours[1]["run"]["facets"]["kinesisBatch"]["records"] == len(run.sent)
                after = catch_up(spark, run.stream, run.output, "next")
                assert after.published == (step == "reading")
                assert_exactly_once(read_rows(run.sink), run.sent)


@pytest.mark.timeout(600)
def test_a_second_signal_or_the_stop_timeout_ends_the_run_at_once_and_the_next_run_settles_it(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    subtests: pytest.Subtests,
) -> None:  # fmt: skip
    twice = a_run_to_stop("sigterm-twice", "staged", "parquet", "local", kinesis, streams, tmp_path, monkeypatch)
    stalled = a_run_to_stop(
        "sigterm-stall", "staged", "parquet", "local", kinesis, streams, tmp_path, monkeypatch, "--stop-timeout", "3"
    )
    processes: list[subprocess.Popen[str]] = []
    with killed_at_exit(processes):
        processes.extend(run.start() for run in (twice, stalled))  # side by side: their JVMs start at once
        ends = ((twice, "SIGTERM again: stopped at once", 5), (stalled, "SIGTERM: not stopped within 3 s", 10))
        for run, says, within in ends:
            with subtests.test(says=says):
                exit_code, lines, seconds = run.ended()
                assert_one_line(lines, f"interrupted by {says}")
                assert exit_code == 143 and seconds < within, (exit_code, seconds, lines[-5:])
                assert set(pending_batches(run.stream).values()) == {RUN_ID}, "a crash leaves its batch pending"
                # Another worker once the leases lapsed: the batch was not published, so it is discarded.
                recovery = catch_up(
                    spark, run.stream, run.output, "next", clock=lambda: time.time() + 2 * LEASE_SECONDS
                )
                assert set(recovery.recovered.values()) == {"discarded"}
                assert_exactly_once(read_rows(run.sink), run.sent)
                assert pending_batches(run.stream) == {}
