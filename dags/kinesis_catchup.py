"""Hourly catch-up of a Kinesis stream into its output table: one DAG run is one kinesis-batch run.

Each step is a task (recover and take leases, read on Spark, publish, commit checkpoints) and
releasing the leases is a teardown that runs even when something failed; ``check_lag`` then
fails the run when the stream is further behind than ``lag_threshold_seconds`` or has unread
records at retention risk. The tasks renew the leases while they work, so a long read keeps
them; ``lease_seconds`` only covers the gaps. The read bound is the run's data interval end, so
a retried or re-run interval reads the same range. One DAG per stream of a streams file:
dags/kinesis_streams.py.

The output is parquet folders, a Delta table or an Iceberg table (params ``format``, ``output``,
``catalog``); S3 is reached with the ``aws_conn_id`` connection (its
``service_config.s3.endpoint_url`` for a local S3).

The stream and the output come from Airflow's configuration, where the DAG processor and the
workers run; they are also the params' defaults. The output is an Asset, named by its URI, with
an event each time the publish task succeeds; an Asset's URI is fixed when this file is parsed,
so it is the *configured* output::

    [kinesis_batch]
    stream = clicks                   # without it the DAG has no schedule and asks for a stream
    format = delta                    # parquet (default) | delta | iceberg
    output = s3://bucket/tables/clicks
    catalog =                         # iceberg only: a pyiceberg catalog name

(or ``AIRFLOW__KINESIS_BATCH__FORMAT`` ...). The Asset URI is then ``s3://bucket/tables/clicks``;
a local path gives ``file:///path``, and an Iceberg table ``iceberg://CATALOG/NAMESPACE.TABLE``
(CATALOG ``default`` when none is named). A bad combination is this file's import error.

A run triggered with another output writes there, but its event still goes to this Asset (it
cannot follow a run's params): the event's extra says what happened, ``{"published", "batch_id",
"records", "format", "output"}``, with ``published`` false when there was nothing new.
"""

from __future__ import annotations

from airflow.sdk import Asset

from kinesis_batch import defaults
from kinesis_batch.airflow.dags import catch_up_dag, catch_up_params
from kinesis_batch.airflow.outputs import configured_output, configured_stream

MAIN = configured_output()
STREAM = configured_stream()
NO_STREAM = (
    "**No stream is configured**, so this DAG has no schedule: set `[kinesis_batch] stream` in Airflow's "
    "configuration (`AIRFLOW__KINESIS_BATCH__STREAM`), or trigger it with a stream. For several streams, "
    "list them in a streams file (`kinesis_streams.py`).\n\n"
)

# Named by its URI: an Asset is one output, and a name reused for another URI would leave
# Airflow holding the old one and refusing the new one as inactive.
catch_up_dag(
    "kinesis_catchup",
    catch_up_params({"stream": STREAM, "format": MAIN.format, "output": MAIN.output, "catalog": MAIN.catalog or ""}),
    outlets=[Asset(MAIN.asset_uri, uri=MAIN.asset_uri)],
    schedule=defaults.SCHEDULE if STREAM else None,
    doc_md=__doc__ if STREAM else NO_STREAM + (__doc__ or ""),
)
