"""A group's runs side by side: each stream's outcome is its own (an error is that stream's, the
others still run), the group's exit code is the worst of them, and a stop keeps the streams not
begun yet from beginning. The streams whose reads are job runs take no turn of the local ones'.
Runs here are plain functions: the group composes them, whatever they are."""

from __future__ import annotations

import signal
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.errors import DependencyError, IllegalArgumentError, LeaseLostError
from kinesis_batch.run.group import StreamRun, local_share, run_group, worst
from kinesis_batch.run.report import RunReport
from kinesis_batch.serverless.gathering import JobRunGathering
from kinesis_batch.stopping import StopRequest


def report(run_id: str) -> RunReport:
    return RunReport(
        run_id=run_id, batch_id=run_id, record=None, recovered={}, leased_elsewhere={}, waiting={}, seconds=0.1
    )


def fails(error: Exception) -> StreamRun:
    def run() -> RunReport:
        raise error

    return run


def test_a_stream_that_fails_fails_alone_and_the_group_says_the_worst_exit_code() -> None:
    runs = {
        "a": lambda: report("ra"),
        "b": fails(LeaseLostError("lost the leases of shardId-0 to w2")),
        "c": lambda: report("rc"),
        "d": fails(IllegalArgumentError("--output: holds a delta table")),
        "e": fails(RuntimeError("a bug")),
    }
    done = run_group("g", runs, at_once=2, stop=StopRequest())

    assert [o.stream for o in done.outcomes] == list(runs)
    assert [o.exit_code for o in done.outcomes] == [0, 3, 0, 2, 1]
    assert [o.report.run_id for o in done.outcomes if o.report] == ["ra", "rc"]
    assert done.exit_code == 1 and [o.stream for o in done.failed] == ["b", "d", "e"]
    assert done.summary().startswith("group g: 2 of 5 streams ran, 0 records in ")
    assert done.summary().endswith("; 3 failed: b, d, e")
    body = done.to_json()
    assert [s["exit_code"] for s in body["streams"]] == [0, 3, 0, 2, 1] and body["exit_code"] == 1
    assert body["streams"][1]["error"] == "lost the leases of shardId-0 to w2"
    assert body["streams"][0]["run_id"] == "ra"


def test_streams_run_side_by_side_up_to_at_once() -> None:
    inside, most, lock = [0], [0], threading.Lock()
    both = threading.Barrier(2, timeout=10)  # two must be in at once, or this waits out its timeout

    def run() -> RunReport:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        both.wait()
        with lock:
            inside[0] -= 1
        return report("r")

    done = run_group("g", {s: run for s in "abcd"}, at_once=2, stop=StopRequest())
    assert done.exit_code == 0 and most[0] == 2


def test_after_a_stop_no_stream_begins_and_each_says_it_was_stopped() -> None:
    stop = StopRequest()
    began: list[str] = []

    def first() -> RunReport:
        began.append("a")
        stop.request(signal.SIGTERM)
        return report("ra")

    def later() -> RunReport:
        began.append("b")
        return report("rb")

    done = run_group("g", {"a": first, "b": later}, at_once=1, stop=stop)
    assert began == ["a"]
    assert [o.exit_code for o in done.outcomes] == [0, 143] and done.exit_code == 143
    assert str(done.outcomes[1].error) == "interrupted by SIGTERM: stopped before stream b began"


ORDER = [130, 143, 1, 2, 3, 4, 0]  # what says most first


@given(st.lists(st.sampled_from([0, 1, 2, 3, 4, 130, 143]), max_size=12))
def test_the_worst_exit_code_is_the_one_that_says_most(codes: list[int]) -> None:
    expected = min(codes, key=lambda code: ORDER.index(code) if code < 128 else 0, default=0)
    assert worst(codes) == expected
    assert worst(codes) != 0 or not any(codes)


@pytest.mark.parametrize(("codes", "said"), [([0, 4, 3], 3), ([4, 0], 4), ([2, 1], 1), ([3, 2], 2), ([1, 143], 143)])
def test_worst_by_hand(codes: list[int], said: int) -> None:
    assert worst(codes) == said


def test_a_retryable_stream_is_retryable_in_the_group_too() -> None:
    done = run_group("g", {"a": fails(DependencyError("Kinesis did not answer"))}, at_once=8, stop=StopRequest())
    assert done.exit_code == 4


def test_streams_read_as_job_runs_take_no_turn_and_begin_beside_the_local_ones() -> None:
    everyone = threading.Barrier(5, timeout=10)  # the first local turn and the four job-run streams, at once
    gathering = JobRunGathering("g", ["j1", "j2", "j3", "j4"])

    def meets() -> RunReport:
        everyone.wait()
        return report("r")

    runs: dict[str, StreamRun] = {s: meets for s in ("l1", "j1", "j2", "j3", "j4")}
    runs["l2"] = lambda: report("l2")  # the second local turn comes after the first
    done = run_group("g", runs, at_once=1, stop=StopRequest(), gathering=gathering)
    assert done.exit_code == 0 and [o.stream for o in done.outcomes] == list(runs)


@pytest.mark.parametrize(
    ("at_once", "job_runs", "share"),
    [(8, [], 5), (8, ["a", "b"], 3), (2, ["a"], 2), (8, ["a", "b", "c", "d", "e"], 1), (1, [], 1)],
)
def test_a_local_read_shares_the_slots_with_the_local_streams_beside_it(
    at_once: int, job_runs: list[str], share: int
) -> None:
    assert local_share(at_once, "abcde", JobRunGathering("g", job_runs)) == share
