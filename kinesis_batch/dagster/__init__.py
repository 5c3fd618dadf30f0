"""kinesis-batch for Dagster: a stream's consumer as a software-defined asset with its schedule,
backfill job, asset checks and failure backstop, on the same library steps as the command line
and the Airflow DAGs. Needs the ``dagster`` extra (``pip install kinesis-batch[dagster]``)."""

from kinesis_batch.dagster.config import BackfillConfig, CatchUpConfig
from kinesis_batch.dagster.defs import STREAM_TAG, build_stream_defs, definitions_from_file
from kinesis_batch.dagster.resources import AwsClients, SparkResource

__all__ = [
    "STREAM_TAG",
    "AwsClients",
    "BackfillConfig",
    "CatchUpConfig",
    "SparkResource",
    "build_stream_defs",
    "definitions_from_file",
]
