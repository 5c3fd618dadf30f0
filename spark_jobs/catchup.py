"""spark-submit entry point for a catch-up run, for deployments that submit a file of their own:
the same as ``kinesis_batch/cli/submit.py`` (see there).

    spark-submit --master spark://host:7077 --py-files kinesis_batch.zip spark_jobs/catchup.py \
        --stream clicks --output /data/clicks
"""

from __future__ import annotations

import sys

from kinesis_batch.cli.submit import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
