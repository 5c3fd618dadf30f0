"""spark-submit entry point of one run's read step, whose other steps run in the submitting
process (kinesis_batch.spark.cluster, kinesis_batch.serverless): ``read_step.py SPEC``, the
spec (a file or an s3:// URI) holding the run's configuration (``RunConfig.to_json``) and its
run id. It reads the leases that run took and writes into its staging; it never writes a lease
(the submitting process renews them). Exit codes as the command line's: 2 bad input or state,
3 a lost lease, 130/143 stopped by a signal. A job run's spec also names its attempt and where
its result goes: the step's last act is to write it (kinesis_batch.serverless.attempt).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kinesis_batch.run import CatchUpRun


def main(argv: list[str]) -> int:
    from kinesis_batch import defaults
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.cli import exit_code
    from kinesis_batch.config import RunConfig
    from kinesis_batch.errors import first_line
    from kinesis_batch.read_spec import ReadStepSpec
    from kinesis_batch.run import CatchUpRun
    from kinesis_batch.spark.engine import spark_submitted
    from kinesis_batch.stopping import StopRequest, say_on_stderr, stopping_on_signals

    (spec,) = argv
    body = ReadStepSpec.from_json(_read_spec(spec))
    engine = spark_submitted()
    stop = StopRequest()
    runs: list[CatchUpRun] = []
    said: list[str] = []

    def read() -> int:
        run = CatchUpRun(
            RunConfig.from_json(body.config),
            kinesis=kinesis_client(),
            dynamodb=dynamodb_client(),
            spark=lambda: engine,
            progress=lambda message: print(message, file=sys.stderr, flush=True),
            run_id=body.run_id,
            stop=stop,
        )
        runs.append(run)
        try:
            run.read()
        except BaseException as exc:
            said.append(first_line(exc))
            raise
        return 0

    try:
        with stopping_on_signals(stop, timeout=defaults.STOP_TIMEOUT_SECONDS, say=say_on_stderr):
            code = exit_code(read)
        if body.attempt is not None and body.result is not None:
            _write_result(body.attempt, body.result, code, said, runs)
        return code
    finally:
        engine.session.stop()


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


def _write_result(attempt: str, at: dict[str, Any], code: int, said: list[str], runs: list[CatchUpRun]) -> None:
    """What this attempt did, where its orchestrator looks (the job's last act)."""
    from kinesis_batch.aws import s3_settings
    from kinesis_batch.serverless.attempt import JobResult
    from kinesis_batch.storage.place import Place

    tasks, failed = (runs[0].tasks, runs[0].failed_task_attempts) if runs else (0, 0)
    result = JobResult(attempt, code, said[0] if said else "", tasks, failed)
    place = Place.from_json(at)
    result.write(Place(place.uri, s3_settings()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
