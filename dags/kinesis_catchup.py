"""Hourly catch-up of a Kinesis stream into its output table: one DAG run is one kinesis-batch run.

Each step is a task (recover and take leases, read on Spark, publish, commit checkpoints) and
releasing the leases is a teardown that runs even when something failed. The tasks renew the
leases while they work, so a long read keeps them; ``lease_seconds`` only covers the gaps. The read bound is the
run's data interval end, so a retried or re-run interval reads the same range.

The output is parquet folders, a Delta table or an Iceberg table (params ``format``, ``output``,
``catalog``); S3 is reached with the ``aws_conn_id`` connection (its
``service_config.s3.endpoint_url`` for a local S3).

The output is also an Asset, named by its URI, with an event each time the publish task
succeeds. An Asset's URI is fixed when this file is parsed, so it is the *configured* output,
which is also the params' default. A team points both at their table in Airflow's configuration,
where the DAG processor and the workers run::

    [kinesis_batch]
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

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Asset, Param, dag, get_current_context, task

from kinesis_batch.airflow.outputs import FORMATS, configured_output
from kinesis_batch.airflow.steps import run_steps
from kinesis_batch.airflow.tasks import catch_up_run, step

MAIN = configured_output()


def _run() -> Any:
    context = get_current_context()
    dag_run = context["dag_run"]
    return catch_up_run(
        dict(context["params"]),
        dag_id=dag_run.dag_id,
        run_id=dag_run.run_id,
        until=context.get("data_interval_end"),
    )


@dag(
    dag_id="kinesis_catchup",
    schedule="@hourly",
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,  # the consumer itself catches up
    max_active_runs=1,
    default_args={"retries": 3, "retry_delay": timedelta(seconds=30), "retry_exponential_backoff": 2.0},
    params={
        "stream": Param("demo-clicks", type="string", minLength=1, maxLength=128),
        "format": Param(MAIN.format, type="string", enum=list(FORMATS)),
        "output": Param(
            MAIN.output,
            type="string",
            minLength=1,
            description="parquet: a folder; delta: a path or s3:// URI of the table; iceberg: NAMESPACE.TABLE",
        ),
        "catalog": Param(
            MAIN.catalog or "", type="string", description="iceberg: a pyiceberg catalog name; empty: the default"
        ),
        "table": Param("", type="string", description="lease table (default kinesis-batch-STREAM)"),
        "spark_master": Param("local[*]", type="string", description="Spark in the task's process"),
        "spark_conn_id": Param(
            "", type="string", description="a Spark connection: spark-submit the read step to that cluster instead"
        ),
        "aws_conn_id": Param("aws_default", type="string"),
        "allow_gaps": Param(False, type="boolean"),
        "lease_seconds": Param(
            300,
            type="number",
            minimum=10,
            maximum=86400,
            description="how long the run's leases last unrenewed: each task renews them while it works, so "
            "this covers the gaps between tasks, and is how soon a dead worker's shards are free again",
        ),
        "read_limits": Param(
            "kinesis",
            type="string",
            description="pace per shard: kinesis (5 calls/s, 2 MiB/s), none, or CALLS,BYTES per second "
            "(e.g. 2.5,1048576 to leave half of each shard to another consumer)",
        ),
    },
    tags=["kinesis-batch"],
)
def kinesis_catchup() -> None:
    @task
    def list_shards() -> dict[str, Any]:
        """List shards, build the lineage, and show what this run would read (reads nothing)."""
        plan = step(_run().plan)
        return {
            "to_read": plan.shard_ids,
            "waves": len(plan.waves()),
            "finished": list(plan.finished),
            "leased_elsewhere": dict(plan.leased_elsewhere),
            "pending_recovery": dict(plan.pending),
        }

    # Named by its URI: an Asset is one output, and a name reused for another URI would leave
    # Airflow holding the old one and refusing the new one as inactive.
    first, _ = run_steps(_run, outlets=[Asset(MAIN.asset_uri, uri=MAIN.asset_uri)])
    list_shards() >> first


kinesis_catchup()
