"""spark-submit entry point: ``kinesis-batch run`` on the context spark-submit configures (its
--master, executors, conf), not on local[*]. Shipped inside the package, so whatever submits
it finds it next to the code it ships (``spark_jobs/catchup.py`` calls the same ``main``).

    spark-submit --master spark://host:7077 --py-files kinesis_batch.zip \\
        .../kinesis_batch/cli/submit.py --stream clicks --output /data/clicks

Executors need the kinesis_batch package (``--py-files`` or installed) and its dependencies.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from kinesis_batch import cli
    from kinesis_batch.spark.engine import spark_submitted

    engine = spark_submitted()
    try:
        return cli.main(["run", *argv], spark=lambda: engine)
    finally:
        engine.session.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
