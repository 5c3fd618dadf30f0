"""spark-submit entry point of one run's read step, whose other steps run in the submitting
process (kinesis_batch.spark.cluster): ``read_step.py SPEC.json``, the spec holding the run's
configuration (``RunConfig.to_json``) and its run id. It reads the leases that run took and
writes into its staging; it never writes a lease (the submitting process renews them). Exit
codes as the command line's: 2 bad input or state, 3 a lost lease, 130/143 stopped by a signal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from kinesis_batch import defaults
    from kinesis_batch.aws import dynamodb_client, kinesis_client
    from kinesis_batch.cli import exit_code
    from kinesis_batch.config import RunConfig
    from kinesis_batch.run import CatchUpRun
    from kinesis_batch.spark.engine import spark_submitted
    from kinesis_batch.stopping import StopRequest, say_on_stderr, stopping_on_signals

    (spec,) = argv
    body = json.loads(Path(spec).read_text())
    engine = spark_submitted()
    stop = StopRequest()

    def read() -> int:
        run = CatchUpRun(
            RunConfig.from_json(body["config"]),
            kinesis=kinesis_client(),
            dynamodb=dynamodb_client(),
            spark=lambda: engine,
            progress=lambda message: print(message, file=sys.stderr, flush=True),
            run_id=body["run_id"],
            stop=stop,
        )
        run.read()
        return 0

    try:
        with stopping_on_signals(stop, timeout=defaults.STOP_TIMEOUT_SECONDS, say=say_on_stderr):
            return exit_code(read)
    finally:
        engine.session.stop()


if __name__ == "__main__":
    # Run as a file, its folder is sys.path[0], where cli/inspect.py would shadow the standard
    # library's inspect for everything imported after (pyspark's first).
    del sys.path[0]
    sys.exit(main(sys.argv[1:]))
