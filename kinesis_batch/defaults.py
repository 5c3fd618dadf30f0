"""Every default a user can override, in one place: the command line, the run's settings, the
Airflow DAGs and streams file, and the Dagster definitions all take theirs from here.

No default names a stream, a demo or a path inside a checkout: a setting that has no sensible
value for every user (the stream, a streams file) has no default, and saying so is the job of
the adapter that needs it.
"""

from __future__ import annotations

#: Spark in the process that runs the read: every core of this machine.
SPARK_MASTER = "local[*]"
#: How long a lease lasts unrenewed. Runs renew theirs every third of it while they work, so this
#: is how soon a dead worker's shards are free again, not how long a run may take.
LEASE_SECONDS = 300.0
#: Kinesis' own per-shard read limits (5 GetRecords calls/s, 2 MiB/s): ``ReadLimits.parse``.
READ_LIMITS = "kinesis"
#: How long one control-plane call (DescribeStreamSummary, ListShards, the lease table's) waits
#: out throttles and dropped connections before its error is the run's: at the top of the hour a
#: fleet shares the account's limits (DescribeStreamSummary: 20 calls a second).
CONTROL_PLANE_WAIT_SECONDS = 300.0
#: Where the stream's first run starts each shard (later shards always start at their start).
INITIAL_POSITION = "trim_horizon"
#: Where a backfill starts, when it names no start.
BACKFILL_START = "trim_horizon"
#: The output format: hive folders of Parquet on a local or HDFS-like file system.
FORMAT = "parquet"
#: A Spark task's files roll at this size (MiB), and maintenance compacts to it: what query
#: engines read best (Delta's and Iceberg's own targets).
TARGET_FILE_MB = 128
# After the first SIGINT or SIGTERM, how long a run or maintenance may take to stop cleanly
# before it exits at once (kinesis_batch.stopping).
STOP_TIMEOUT_SECONDS = 30.0
#: Maintenance keeps a week of versions and snapshots, and files no kept commit references
#: are removed once this old (Delta's vacuum default).
RETAIN_HOURS = 168
#: The mean file size of recent partitions below which the status views warn (MiB).
SMALL_FILE_MB = 16
#: When the maintenance DAG and Dagster schedule run (UTC): daily, off the hour of the catch-ups.
MAINTAIN_SCHEDULE = "30 3 * * *"
#: The main output of the Airflow DAGs when ``[kinesis_batch] output`` is not set.
OUTPUT = "/tmp/kinesis-batch/output"
#: How far behind a stream may fall before the lag check fails.
LAG_THRESHOLD_SECONDS = 3600.0
#: The share of a decoded batch's records that may be dead letters before the check fails (1: never).
DEAD_LETTER_THRESHOLD = 1.0
#: The Airflow connection the DAGs and the UI page reach AWS with.
AWS_CONN_ID = "aws_default"
#: How often a stream's consumer runs: Airflow's preset, and the same as a cron expression (Dagster).
SCHEDULE = "@hourly"
#: A group's streams read side by side in one run (kinesis_batch.run.group), each a Spark job of
#: its own in the run's one session; the others wait their turn.
STREAMS_AT_ONCE = 8
#: A group's streams whose reads are EMR Serverless job runs share one job run per application,
#: of at most this many streams (a larger set is split evenly): each is a thread and a Spark job
#: in the job's one driver, whose default worker (4 vCPU, 16 GB) holds 64 reads' threads, clients
#: and task results without strain, while one run's start and minimum is paid per 64 streams.
STREAMS_PER_JOB_RUN = 64
CRON_SCHEDULE = "0 * * * *"
#: Seconds between two polls of an EMR Serverless job run's state (GetJobRun).
EMR_SERVERLESS_POLL_SECONDS = 15.0
#: How often Dagster's asset checks run on their own.
CHECKS_CRON_SCHEDULE = "*/15 * * * *"


def lease_table(stream: str) -> str:
    """A stream's lease table when none is named (its history table adds ``-history``)."""
    return f"kinesis-batch-{stream}"
