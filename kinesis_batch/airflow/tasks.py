"""What the DAGs' tasks do, on the same library calls as the command line and Dagster
(kinesis_batch.orchestration): a DAG run's params become a run request, and its run.

A DAG run is one catch-up run: its steps (start, read, publish, commit, finish) run as separate
tasks, possibly in separate processes, and find each other's state through the lease table and
the batch's staging. The worker id and the batch id derive from the DAG run, so a retried task
resumes the same run. Each task renews the run's leases while it works; the lease duration
(``lease_seconds``, 5 minutes by default) only has to cover the gaps between tasks, and is how
soon a dead worker's shards are free again.

Errors: those no retry can fix (bad input, bad state, a lost lease) fail the task without
retries (AirflowFailException); throttling and unreachable endpoints raise as they are, so the
task's retries apply.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import fields
from datetime import datetime
from typing import Any, TypeVar

from airflow.sdk.exceptions import AirflowFailException

from kinesis_batch import defaults, orchestration
from kinesis_batch.airflow.hook import KinesisBatchHook
from kinesis_batch.config import KEEP, MOVE, default_table
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.orchestration import RunRequest
from kinesis_batch.output import Output
from kinesis_batch.run import CatchUpRun

T = TypeVar("T")


def run_ids(dag_id: str, run_id: str) -> tuple[str, str]:
    """(worker id, batch id) for a DAG run: stable across task retries, unique per run."""
    return orchestration.run_ids("airflow", dag_id, run_id, stamp=run_id.split("__")[-1])


def failing_fast() -> AbstractContextManager[None]:
    """Errors a retry cannot fix fail the task for good, with the library's one line."""
    return orchestration.failing_permanently(AirflowFailException)


def step(call: Callable[[], Any]) -> Any:
    """Run one step of the catch-up run, failing fast on errors a retry cannot fix."""
    with failing_fast():
        return call()


def renewed(run: CatchUpRun, call: Callable[[], T]) -> Callable[[], T]:
    """``call`` with the run's leases renewed while it works (and a stop cancelling its read)."""

    def renewing() -> T:
        with run.renewing():
            return call()

    return renewing


def stopping_step(run: CatchUpRun, call: Callable[[], Any]) -> Any:
    """:func:`step` of a step that holds the run's leases: when the task is killed meanwhile
    (``on_kill``: the run's stop asked for), it ends at the next safe point with the teardown a
    stop owes (CatchUpRun.honouring_stop), and fails with its one line."""
    return step(lambda: run.honouring_stop(call))


def catch_up_run(params: dict[str, Any], *, dag_id: str, run_id: str, until: datetime | None) -> CatchUpRun:
    """The run for this DAG run, from its params (stream, output, format, catalog, table,
    spark_master, aws_conn_id, lease_seconds, read_limits, allow_gaps, and the decoding ones)."""
    with failing_fast():
        output = Output(params.get("format") or defaults.FORMAT, params["output"], params.get("catalog") or None)
        return _run(_request(params, output, until), params, dag_id=dag_id, run_id=run_id)


def backfill_run(params: dict[str, Any], *, dag_id: str, run_id: str, main: Output) -> CatchUpRun:
    """The backfill's run: its own lease table unless it moves the main checkpoints, and its own
    output unless the ``output`` param names one (derived from ``main``, the main output); read
    up to ``end`` (ISO 8601) or the tip."""
    with failing_fast():
        request, _ = _request(params, main).backfill(
            run_ids(dag_id, run_id)[1],
            format=params.get("format") or defaults.FORMAT,
            output=params.get("output") or "",
            catalog=params.get("catalog") or None,
            end=params.get("end") or "",
            move_main_checkpoints=bool(params.get("move_main_checkpoints")),
        )
        return _run(request, params, dag_id=dag_id, run_id=run_id)


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


def read_step(run: CatchUpRun, params: dict[str, Any]) -> None:
    """The Spark step, with the run's leases renewed in this process while it reads: local Spark
    here (the ``spark_master`` param), or, when the ``spark_conn_id`` param names a Spark
    connection, spark-submitted to that cluster (a lost lease kills the submit)."""
    conn_id = params.get("spark_conn_id")
    if not conn_id:
        stopping_step(run, renewed(run, run.read))
        return
    from airflow.sdk import BaseHook

    from kinesis_batch.spark.cluster import SparkCluster, submitted_read

    connection = BaseHook.get_connection(conn_id)
    with failing_fast():
        cluster = SparkCluster.from_connection(connection.host, connection.port, connection.extra_dejson)
    env = _hook(params).aws_env()
    with submitted_read(cluster, run.config, run.run_id, env, print) as read:
        stopping_step(run, renewed(run, lambda: run.read_elsewhere(read)))


def published_event(run: CatchUpRun, published: bool, asset_uri: str) -> dict[str, Any]:
    """The extra of the publish task's Asset event: what this run published, and where. The
    Asset is the configured output; ``output`` says when a run's params pointed elsewhere."""
    record = run.output.committed(run.run_id) if published else None
    output = Output.of(run.config).asset_uri
    if output != asset_uri:
        print(f"WARNING: this run wrote to {output}, not to the Asset's output {asset_uri}")
    landing = record.landing if record else None
    return {
        "published": published,
        "batch_id": run.run_id,
        "records": record.records if record else 0,
        **({"rows": landing.rows, "dead_letters": landing.dead_letters} if landing else {}),
        "format": run.config.format,
        "output": output,
    }


def _request(params: dict[str, Any], output: Output, until: datetime | None = None) -> RunRequest:
    return RunRequest(
        stream=params["stream"],
        output=output,
        table=params.get("table") or "",
        until=until,
        initial_position=params.get("initial_position") or defaults.INITIAL_POSITION,
        lease_seconds=float(params.get("lease_seconds") or orchestration.ORCHESTRATED_LEASE_SECONDS),
        spark_master=params.get("spark_master") or defaults.SPARK_MASTER,
        allow_gaps=bool(params.get("allow_gaps")),
        read_limits=params.get("read_limits") or defaults.READ_LIMITS,
        decoding=decoding(params),
        partition_by=params.get("partition_by") or "",
        target_file_mb=int(params.get("target_file_mb") or defaults.TARGET_FILE_MB),
        output_binding=MOVE if params.get("move_output") else KEEP,
    )


def decoding(params: dict[str, Any]) -> DecodeSettings:
    """The decoding settings among a DAG run's params (empty values: not set)."""
    names = [field.name for field in fields(DecodeSettings)]
    return DecodeSettings.from_json({name: params.get(name) or None for name in names if name in params})


def _run(request: RunRequest, params: dict[str, Any], *, dag_id: str, run_id: str) -> CatchUpRun:
    """The run, reaching AWS (and the table sinks S3) through the ``aws_conn_id`` connection."""
    from kinesis_batch.spark.session import default_spark

    worker_id, batch_id = run_ids(dag_id, run_id)
    return orchestration.orchestrated_run(
        request, worker_id=worker_id, batch_id=batch_id, aws=_hook(params), spark=default_spark(request.spark_master)
    )


def _hook(params: dict[str, Any]) -> KinesisBatchHook:
    return KinesisBatchHook(params.get("aws_conn_id") or defaults.AWS_CONN_ID)
