"""A stop asked for: once, from a signal handler or another thread, honoured at the next safe
point; and a process's own SIGINT and SIGTERM as that request, a second one (or the timeout)
ending the process at once with 128 + the signal."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

from kinesis_batch.errors import LeaseLostError, ShutdownError, classify
from kinesis_batch.stopping import StopRequest, stopping_on_signals
from tests.runs import REPO


def test_the_first_request_wins_and_a_check_then_raises_the_signals_one_line() -> None:
    stop = StopRequest()
    stop.check("before reading")  # nothing asked: nothing happens
    assert stop.request(signal.SIGTERM) and not stop.request(signal.SIGINT)
    with pytest.raises(ShutdownError) as stopped:
        stop.check("before reading")
    assert str(stopped.value) == "interrupted by SIGTERM: stopped before reading"
    assert classify(stopped.value).exit_code == 143 and classify(stopped.value).permanent  # no retry of the task


@pytest.mark.parametrize(("number", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_run_exits_with_128_plus_its_signal(number: int, code: int) -> None:
    assert classify(ShutdownError("x", signal_number=number)).exit_code == code


def test_a_task_readers_stop_without_a_signal_is_still_a_lease_error() -> None:
    assert classify(ShutdownError("another shard failed")) == classify(LeaseLostError("x"))


def test_what_waits_on_a_stop_is_called_in_a_thread_of_its_own_and_at_once_when_already_asked() -> None:
    stop, called = StopRequest(), threading.Event()
    threads: list[str] = []

    def cancel() -> None:
        threads.append(threading.current_thread().name)
        called.set()

    with stop.on_request(cancel):
        stop.request(signal.SIGINT)
        assert called.wait(5)
    assert threads == ["kinesis-batch-stop"]
    late: list[bool] = []
    with stop.on_request(lambda: late.append(True)):
        assert late == [True]
    with stop.on_request(lambda: late.append(True)):  # released: a later request calls nobody else
        pass
    assert late == [True, True]


SIGNALLED = """
import os, signal, sys, time
from kinesis_batch.stopping import StopRequest, stopping_on_signals

stop = StopRequest()
seconds_to_stop = float(sys.argv[1])
with stopping_on_signals(stop, timeout=2, say=lambda line: None):
    print("ready", flush=True)
    while not stop.requested:
        time.sleep(0.01)
    time.sleep(seconds_to_stop)  # the clean stop's own work
print("stopped cleanly", flush=True)
"""


def signalled(seconds_to_stop: float, signals: int) -> tuple[int, str, str, float]:
    process = subprocess.Popen(
        [sys.executable, "-c", SIGNALLED, str(seconds_to_stop)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        started = time.monotonic()
        for _ in range(signals):
            process.send_signal(signal.SIGTERM)
            time.sleep(0.3)
        out, err = process.communicate(timeout=30)
        return process.returncode, out, err, time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.isolated("a signal")
def test_a_clean_stop_in_time_ends_as_the_work_says() -> None:
    code, out, err, _ = signalled(0.5, signals=1)
    assert (code, out, err) == (0, "stopped cleanly\n", "")


@pytest.mark.isolated("a signal")
def test_a_second_signal_exits_at_once_with_143_and_one_line() -> None:
    code, out, err, seconds = signalled(20, signals=2)
    assert code == 143 and out == "" and seconds < 5
    assert (
        err.startswith("kinesis-batch: error: interrupted by SIGTERM again: stopped at once;") and err.count("\n") == 1
    )


@pytest.mark.isolated("a signal")
def test_a_stop_that_outlasts_its_timeout_exits_then_with_one_line() -> None:
    code, _, err, seconds = signalled(20, signals=1)
    assert code == 143 and 2 <= seconds < 6
    assert err.startswith("kinesis-batch: error: interrupted by SIGTERM: not stopped within 2 s;"), err


def test_outside_the_main_thread_the_signals_are_left_alone() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    def elsewhere() -> None:
        with stopping_on_signals(StopRequest(), timeout=1):
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert seen == [before]
