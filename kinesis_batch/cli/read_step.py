"""spark-submit entry point of one run's read step, whose other steps run in the submitting
process (kinesis_batch.spark.cluster, kinesis_batch.serverless): ``read_step.py SPEC``, the
spec (a file or an s3:// URI) holding the run's configuration (``RunConfig.to_json``) and its
run id. It reads the leases that run took and writes into its staging; it never writes a lease
(the submitting process renews them). Exit codes as the command line's: 2 bad input or state,
3 a lost lease, 130/143 stopped by a signal. The spec also names its attempt and where its
result goes (a job run's, a spark-submit's): the step's last act is to write it, with the error
it ended with and its kind (kinesis_batch.serverless.attempt).

``read_step.py SPEC SPEC...``: a group's job run (kinesis_batch.serverless.gathering) reads every
spec side by side in the one Spark session, each with a stop of its own and an equal share of the
session's task slots: its orchestrator asks it to stop alone by a marker beside its spec (polled),
a signal stops them all. Each writes its own result, with the task seconds its read held (its
share of the job run's bill); the process exits 0 once every one is written (each spec's outcome
is its result's).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from kinesis_batch.read_spec import ReadStepSpec
    from kinesis_batch.run import CatchUpRun
    from kinesis_batch.stopping import StopRequest


def main(argv: list[str]) -> int:
    from kinesis_batch import defaults
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.cli import exit_code
    from kinesis_batch.config import RunConfig
    from kinesis_batch.read_spec import ReadStepSpec
    from kinesis_batch.run import CatchUpRun
    from kinesis_batch.spark.engine import spark_submitted
    from kinesis_batch.stopping import StopRequest, say_on_stderr, stopping_on_signals

    bodies = [ReadStepSpec.from_json(_read_spec(spec)) for spec in argv]
    engine = spark_submitted()
    stop = StopRequest()
    kinesis, dynamodb = kinesis_client(), dynamodb_client()  # thread-safe: one of each for every spec

    def read_one(body: ReadStepSpec, own: StopRequest) -> int:
        runs: list[CatchUpRun] = []
        failed: list[BaseException] = []

        def read() -> int:
            try:  # a run that cannot be made (its output's catalog unknown here) fails its result too
                config = RunConfig.from_json(body.config)
                run = CatchUpRun(
                    replace(config, slot_share=len(bodies)) if len(bodies) > 1 else config,
                    kinesis=kinesis,
                    dynamodb=dynamodb,
                    spark=lambda: engine,
                    progress=lambda message: print(message, file=sys.stderr, flush=True),
                    run_id=body.run_id,
                    stop=own,
                )
                runs.append(run)
                run.read()
            except BaseException as exc:
                failed.append(exc)
                raise
            return 0

        code = exit_code(read)
        if body.attempt is not None and body.result is not None:
            _write_result(body.attempt, body.result, code, failed, runs)
        return code

    try:
        with stopping_on_signals(stop, timeout=defaults.STOP_TIMEOUT_SECONDS, say=say_on_stderr):
            if len(bodies) == 1:
                return read_one(bodies[0], stop)
            return _side_by_side(bodies, stop, read_one)
    finally:
        engine.session.stop()


def _side_by_side(
    bodies: list[ReadStepSpec], stop: StopRequest, read_one: Callable[[ReadStepSpec, StopRequest], int]
) -> int:
    """A group's specs in threads of their own, each stopped alone when its marker appears (or
    all of them by ``stop``); 0 once every result is written, else the worst exit code."""
    import signal
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from kinesis_batch.run.group import worst
    from kinesis_batch.serverless.step import poll_seconds
    from kinesis_batch.stopping import StopRequest

    own = [StopRequest() for _ in bodies]
    finished = threading.Event()

    def stop_all() -> None:
        for one in own:
            one.request(signal.SIGTERM)

    def watch() -> None:  # the orchestrators' asks to stop one read alone
        while not finished.wait(poll_seconds()):
            for body, one in zip(bodies, own, strict=True):
                if not one.requested and body.result is not None and _stop_asked(body.result):
                    one.request(signal.SIGTERM)

    with stop.on_request(stop_all), ThreadPoolExecutor(max_workers=len(bodies), thread_name_prefix="spec") as pool:
        threading.Thread(target=watch, name="stop-asks", daemon=True).start()
        codes = list(pool.map(read_one, bodies, own))
    finished.set()
    return 0 if all(body.result is not None for body in bodies) else worst(codes)


def _stop_asked(result: dict[str, Any]) -> bool:
    """Whether the orchestrator of the read whose result goes to ``result`` asked it to stop."""
    from kinesis_batch.aws import s3_settings
    from kinesis_batch.serverless.attempt import STOP
    from kinesis_batch.storage.place import Place

    folder, _, _ = Place.from_json(result).uri.rpartition("/")
    return Place(folder, s3_settings()).read_text(STOP) is not None


def _read_spec(spec: str) -> str:
    from kinesis_batch.aws import s3_settings
    from kinesis_batch.storage.place import Place, is_s3

    if not is_s3(spec):
        return Path(spec).read_text()
    folder, _, name = spec.rpartition("/")
    text = Place(folder, s3_settings()).read_text(name)
    if text is None:
        raise SystemExit(f"kinesis-batch: error: the read step's spec {spec} does not exist")
    return text


def _write_result(
    attempt: str, at: dict[str, Any], code: int, failed: list[BaseException], runs: list[CatchUpRun]
) -> None:
    """What this attempt did, where its orchestrator looks (the job's last act)."""
    from kinesis_batch.aws import s3_settings
    from kinesis_batch.errors import first_line, kind_of
    from kinesis_batch.serverless.attempt import JobResult
    from kinesis_batch.storage.place import Place

    held = (runs[0].tasks, runs[0].failed_task_attempts, runs[0].task_seconds) if runs else (0, 0, 0.0)
    error, kind = (first_line(failed[0]), kind_of(failed[0])) if failed else ("", "")
    result = JobResult(attempt, code, error, *held, kind=kind)
    place = Place.from_json(at)
    result.write(Place(place.uri, s3_settings()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
