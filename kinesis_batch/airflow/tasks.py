"""What the DAGs' tasks do, on the same library calls as the command line.

A DAG run is one catch-up run: its steps (start, read, publish, commit, finish) run as separate
tasks, possibly in separate processes, and find each other's state through the lease table and
the batch's staging. The worker id and the batch id derive from the DAG run, so a retried task
resumes the same run; the lease duration covers the whole DAG run.

Errors: argument and state errors fail the task without retries (AirflowFailException);
throttling and unreachable endpoints raise as they are, so the task's retries apply.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from kinesis_batch.airflow.hook import KinesisBatchHook
from kinesis_batch.airflow.outputs import Output, backfill_output
from kinesis_batch.backfill import backfill_table, seed, start_checkpoints
from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.config import RunConfig, default_table, parse_initial_position, parse_time
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError, LeaseError
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.output import open_sink
from kinesis_batch.run import CatchUpRun
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards

#: A DAG run's leases must outlive the gaps between its tasks (no renewer runs between them).
DAG_LEASE_SECONDS = 3600.0


def run_ids(dag_id: str, run_id: str) -> tuple[str, str]:
    """(worker id, batch id) for a DAG run: stable across task retries, unique per run."""
    digest = hashlib.sha256(f"{dag_id}/{run_id}".encode()).hexdigest()[:10]
    stamp = re.sub(r"[^0-9T]", "", run_id.split("__")[-1])[:15] or "run"
    return f"airflow-{dag_id}-{digest}", f"{dag_id}-{stamp}-{digest}"


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
    spark_master, aws_conn_id). The sink reaches S3 with the AWS connection's settings."""
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
            lease_seconds=float(params.get("lease_seconds") or DAG_LEASE_SECONDS),
            worker_id=worker_id,
            spark_master=params.get("spark_master") or "local[*]",
            allow_gaps=bool(params.get("allow_gaps")),
            format=params.get("format") or "parquet",
            catalog=params.get("catalog") or None,
        )
        sink = open_sink(
            config.format,
            config.output,
            app=config.table,
            stream=config.stream,
            catalog=config.catalog,
            s3=hook.s3(),
        )
    return CatchUpRun(
        config,
        kinesis=hook.kinesis(),
        dynamodb=hook.dynamodb(),
        spark=default_spark(config.spark_master),
        progress=print,
        run_id=batch_id,
        sink=sink,
    )


def published_event(run: CatchUpRun, published: bool, asset_uri: str) -> dict[str, Any]:
    """The extra of the publish task's Asset event: what this run published, and where. The
    Asset is the configured output; ``output`` says when a run's params pointed elsewhere."""
    record = run.output.committed(run.run_id) if published else None
    output = Output(run.config.format, run.config.output, run.config.catalog).asset_uri
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
    """The Spark step: in this process (local Spark, or the ``spark_master`` param), or, when the
    ``spark_conn_id`` param names a Spark connection, spark-submitted to that cluster."""
    conn_id = params.get("spark_conn_id")
    if not conn_id:
        step(run.read)
        return
    from airflow.sdk import BaseHook

    from kinesis_batch.spark.cluster import SparkCluster, package_zip, read_step_args, submit, submit_command

    connection = BaseHook.get_connection(conn_id)
    with failing_fast():
        cluster = SparkCluster.from_connection(connection.host, connection.port, connection.extra_dejson)
    env = KinesisBatchHook(params.get("aws_conn_id") or "aws_default").aws_env()
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-submit-") as scratch:
        command = submit_command(
            cluster, package_zip(Path(scratch)), read_step_args(run.config, run.run_id), f"kinesis-batch-{run.run_id}"
        )
        step(lambda: submit(command, env, print))


def backfill_run(params: dict[str, Any], *, dag_id: str, run_id: str, main: Output) -> CatchUpRun:
    """The backfill's run: its own lease table unless it moves the main checkpoints, and its own
    output unless the ``output`` param names one (derived from ``main``, the main output); read
    up to ``end`` (ISO 8601) or the tip."""
    backfill_id = run_ids(dag_id, run_id)[1]
    with failing_fast():
        until = parse_time(params["end"], setting="end") if params.get("end") else None
        main_table = params.get("table") or default_table(params["stream"])
        table = main_table if params.get("move_main_checkpoints") else backfill_table(main_table, backfill_id)
        output = params.get("output") or backfill_output(main, params.get("format") or "parquet", backfill_id)
    return catch_up_run(params, dag_id=dag_id, run_id=run_id, until=until, table=table, output=output)


def seed_backfill(params: dict[str, Any], *, dag_id: str, run_id: str, main: Output) -> dict[str, str]:
    """Check the form's values and create the backfill's lease table at its start checkpoints.
    Returns shard -> start checkpoint (empty when the backfill moves the main checkpoints)."""
    run = backfill_run(params, dag_id=dag_id, run_id=run_id, main=main)
    if params.get("move_main_checkpoints"):
        return {}
    with failing_fast():
        lineage = Lineage.build(list_shards(run.kinesis, run.config.stream))
        leases = LeaseStore(run.store.client, params.get("table") or default_table(run.config.stream))
        history = HistoryTable(leases.client, leases.table_name) if leases.table_exists() else None
        starts = start_checkpoints(
            params.get("start") or "trim_horizon", lineage, params.get("shards") or lineage.order, history
        )
        run.checkpoints.create_checkpoint_store_if_not_exists()
        seed(run.store, lineage, starts)
    return {shard: str(checkpoint) for shard, checkpoint in starts.items()}
