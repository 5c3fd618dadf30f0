"""Users' own path to typed rows, without typed landing: a PySpark job over the raw landing's
Parquet that parses ``data`` with ``from_json`` and the events' schema into a typed Parquet
table, the Kinesis columns beside the fields. What a team writes and schedules after the raw
landing (a stock local session: users do not tune their start-up).

    python -m benchmarks.from_json RAW_ROOT OUT     # prints {"rows": N, "job_seconds": S}
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    raw, out = argv
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as f

    from benchmarks.events import spark_ddl

    spark = SparkSession.builder.master("local[*]").appName("from_json").getOrCreate()
    started = time.monotonic()
    landed = spark.read.parquet(raw)
    kinesis = ["shard_id", "sequence_number", "sub_sequence_number", "partition_key", "approximate_arrival_timestamp"]
    typed = landed.select(*kinesis, "batch_id", f.from_json(f.col("data").cast("string"), spark_ddl()).alias("e"))
    typed.select(*kinesis, "batch_id", "e.*").write.mode("overwrite").parquet(out)
    seconds = time.monotonic() - started
    spark.stop()
    print(json.dumps({"job_seconds": seconds}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
