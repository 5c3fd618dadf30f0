"""What the DAGs' tasks do, on the same library calls as the command line.

A DAG run is one catch-up run: its steps (start, read, publish, commit, finish) run as separate
tasks, possibly in separate processes, and find each other's state through the lease table and
the batch's staging. The worker id and the batch id derive from the DAG run, so a retried task
resumes the same run. Each task renews the run's leases while it works; the lease duration
(``lease_seconds``, 5 minutes by default) only has to cover the gaps between tasks, and is how
soon a dead worker's shards are free again.

Errors: argument and state errors fail the task without retries (AirflowFailException);
throttling and unreachable endpoints raise as they are, so the task's retries apply.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from kinesis_batch import orchestration
from kinesis_batch.airflow.hook import KinesisBatchHook
from kinesis_batch.config import RunConfig, default_table, parse_initial_position, parse_time
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError, LeaseError
from kinesis_batch.orchestration import Output
from kinesis_batch.run import CatchUpRun
from kinesis_batch.shards.reader import ReadLimits


def run_ids(dag_id: str, run_id: str) -> tuple[str, str]:
    """(worker id, batch id) for a DAG run: stable across task retries, unique per run."""
    return orchestration.run_ids("airflow", dag_id, run_id, stamp=run_id.split("__")[-1])


def catch_up_run(
    params: dict[str, Any],
    *,
    dag_id: str,
    run_id: str,
    until: datetime | None,
    table: str = "",
    output: str = "",
) -> CatchUpRun:
    """The run for this DAG run, from its params (stream, output, format, catalog, table,
    spark_master, aws_conn_id, lease_seconds, read_limits). The sink reaches S3 with the AWS
    connection's settings."""
    from kinesis_batch.spark.session import default_spark

    worker_id, batch_id = run_ids(dag_id, run_id)
    hook = KinesisBatchHook(params.get("aws_conn_id") or "aws_default")
    with failing_fast():
        config = RunConfig(
            stream=params["stream"],
            output=output or params["output"],
            table=table or params.get("table") or "",
            initial_position=parse_initial_position(params.get("initial_position") or "trim_horizon"),
            until=until,
            lease_seconds=float(params.get("lease_seconds") or orchestration.ORCHESTRATED_LEASE_SECONDS),
            worker_id=worker_id,
            spark_master=params.get("spark_master") or "local[*]",
            allow_gaps=bool(params.get("allow_gaps")),
            read_limits=ReadLimits.parse(params.get("read_limits") or "kinesis"),
            format=params.get("format") or "parquet",
            catalog=params.get("catalog") or None,
        )
        return orchestration.orchestrated_run(
            config,
            kinesis=hook.kinesis(),
            dynamodb=hook.dynamodb(),
            s3=hook.s3(),
            spark=default_spark(config.spark_master),
            batch_id=batch_id,
        )


def published_event(run: CatchUpRun, published: bool, asset_uri: str) -> dict[str, Any]:
    """The extra of the publish task's Asset event: what this run published, and where. The
    Asset is the configured output; ``output`` says when a run's params pointed elsewhere."""
    record = run.output.committed(run.run_id) if published else None
    output = Output.of(run.config).asset_uri
    if output != asset_uri:
        print(f"WARNING: this run wrote to {output}, not to the Asset's output {asset_uri}")
    return {
        "published": published,
        "batch_id": run.run_id,
        "records": record.records if record else 0,
        "format": run.config.format,
        "output": output,
    }


@contextmanager
def failing_fast() -> Iterator[None]:
    """Bad arguments and bad state fail the task for good: a retry cannot fix them."""
    try:
        yield
    except (IllegalArgumentError, InvalidStateError, LeaseError) as exc:
        raise AirflowFailException(str(exc)) from exc


def step(call: Callable[[], Any]) -> Any:
    """Run one step of the catch-up run, failing fast on errors a retry cannot fix."""
    with failing_fast():
        return call()


def read_step(run: CatchUpRun, params: dict[str, Any]) -> None:
    """The Spark step, with the run's leases renewed in this process while it reads: local Spark
    here (the ``spark_master`` param), or, when the ``spark_conn_id`` param names a Spark
    connection, spark-submitted to that cluster (a lost lease kills the submit)."""
    conn_id = params.get("spark_conn_id")
    if not conn_id:
        with run.renewing():
            step(run.read)
        return
    from airflow.sdk import BaseHook

    from kinesis_batch.spark.cluster import SparkCluster, submitted_read

    connection = BaseHook.get_connection(conn_id)
    with failing_fast():
        cluster = SparkCluster.from_connection(connection.host, connection.port, connection.extra_dejson)
    env = KinesisBatchHook(params.get("aws_conn_id") or "aws_default").aws_env()
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-submit-") as scratch, run.renewing():
        read = submitted_read(cluster, run.config, run.run_id, env, print, Path(scratch))
        step(lambda: run.read_elsewhere(read))


def backfill_run(params: dict[str, Any], *, dag_id: str, run_id: str, main: Output) -> CatchUpRun:
    """The backfill's run: its own lease table unless it moves the main checkpoints, and its own
    output unless the ``output`` param names one (derived from ``main``, the main output); read
    up to ``end`` (ISO 8601) or the tip."""
    with failing_fast():
        backfill = orchestration.plan_backfill(
            stream=params["stream"],
            main=main,
            backfill_id=run_ids(dag_id, run_id)[1],
            format=params.get("format") or "parquet",
            output=params.get("output") or "",
            table=params.get("table") or "",
            until=parse_time(params["end"], setting="end") if params.get("end") else None,
            move_main_checkpoints=bool(params.get("move_main_checkpoints")),
        )
    return catch_up_run(
        params, dag_id=dag_id, run_id=run_id, until=backfill.until, table=backfill.table, output=backfill.output
    )


def seed_backfill(params: dict[str, Any], *, dag_id: str, run_id: str, main: Output) -> dict[str, str]:
    """Check the form's values and create the backfill's lease table at its start checkpoints.
    Returns shard -> start checkpoint (empty when the backfill moves the main checkpoints)."""
    run = backfill_run(params, dag_id=dag_id, run_id=run_id, main=main)
    if params.get("move_main_checkpoints"):
        return {}
    main_table = params.get("table") or default_table(run.config.stream)
    with failing_fast():
        return orchestration.seed_backfill(
            run, main_table=main_table, start=params.get("start") or "", shards=params.get("shards") or ()
        )
