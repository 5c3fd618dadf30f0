"""The catch-up DAG, built for the DAG files: ``kinesis_catchup`` (one stream, from its params)
and ``kinesis_catchup__<stream>`` (one per entry of the streams file) are the same DAG.

list_shards >> acquire_leases >> run_spark_job >> publish >> commit_checkpoints >> release_leases
(a teardown) >> check_lag. The read bound is the run's data interval end, so a retried or re-run
interval reads the same range. ``check_lag`` runs at the end of every run, also after a failed
one: past the ``lag_threshold_seconds`` param, or with unread records at retention risk, it fails
with one line naming the shards, how far behind they are and when retention trims them; a
decoding run's also past ``dead_letter_threshold`` (a share of the last batch's records), naming
how many, the shards and the most common reason. Airflow's notifiers and callbacks
(``on_failure_callback``) can then page someone.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Asset, Param, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from kinesis_batch import defaults
from kinesis_batch.airflow.steps import run_steps
from kinesis_batch.airflow.tasks import catch_up_run, step
from kinesis_batch.alerts import judge_dead_letters, judge_lag
from kinesis_batch.config import FORMATS
from kinesis_batch.decoding.settings import (
    DECODERS,
    DECOMPRESSION,
    ON_BAD_RECORD,
    RAW,
    SCHEMA_EVOLUTION,
    DecodeSettings,
)
from kinesis_batch.orchestration import ORCHESTRATED_LEASE_SECONDS
from kinesis_batch.output import Output
from kinesis_batch.run import CatchUpRun

START = datetime(2026, 1, 1, tzinfo=UTC)
RETRIES = {"retries": 3, "retry_delay": timedelta(seconds=30), "retry_exponential_backoff": 2.0}


def catch_up_params(
    *,
    stream: str,
    output: Output,
    table: str = "",
    spark_master: str = defaults.SPARK_MASTER,
    spark_conn_id: str = "",
    aws_conn_id: str = defaults.AWS_CONN_ID,
    lease_seconds: float = ORCHESTRATED_LEASE_SECONDS,
    read_limits: str = defaults.READ_LIMITS,
    lag_threshold_seconds: float = defaults.LAG_THRESHOLD_SECONDS,
    decoding: DecodeSettings = RAW,
    dead_letter_threshold: float = defaults.DEAD_LETTER_THRESHOLD,
    partition_by: str = "",
    target_file_mb: int = defaults.TARGET_FILE_MB,
) -> dict[str, Param]:
    """The form of a catch-up DAG, with these defaults (a manual trigger may change them).
    ``stream`` "": no default, so the form asks for one (and the DAG cannot be scheduled)."""
    stream_param = (
        Param(stream, type="string", minLength=1, maxLength=128)
        if stream
        else Param(type="string", minLength=1, maxLength=128, description="no stream is configured: name one")
    )
    return {
        "stream": stream_param,
        "format": Param(output.format, type="string", enum=list(FORMATS)),
        "output": Param(
            output.output,
            type="string",
            minLength=1,
            description="parquet: a folder; delta: a path or s3:// URI of the table; iceberg: NAMESPACE.TABLE",
        ),
        "catalog": Param(
            output.catalog or "", type="string", description="iceberg: a pyiceberg catalog name; empty: the default"
        ),
        "table": Param(table, type="string", description="lease table (default kinesis-batch-STREAM)"),
        "spark_master": Param(spark_master, type="string", description="Spark in the task's process"),
        "spark_conn_id": Param(
            spark_conn_id, type="string", description="a Spark connection: spark-submit the read step to that cluster"
        ),
        "aws_conn_id": Param(aws_conn_id, type="string"),
        "allow_gaps": Param(False, type="boolean"),
        "move_output": Param(
            False,
            type="boolean",
            description="publish to this output from now on, though the lease table records another "
            "(trigger once with it; the move is kept in the history)",
        ),
        "lease_seconds": Param(
            lease_seconds,
            type="number",
            minimum=10,
            maximum=86400,
            description="how long the run's leases last unrenewed: each task renews them while it works, so "
            "this covers the gaps between tasks, and is how soon a dead worker's shards are free again",
        ),
        "read_limits": Param(
            read_limits,
            type="string",
            description="pace per shard: kinesis (5 calls/s, 2 MiB/s), none, or CALLS,BYTES per second "
            "(e.g. 2.5,1048576 to leave half of each shard to another consumer)",
        ),
        "lag_threshold_seconds": Param(
            lag_threshold_seconds,
            type="number",
            exclusiveMinimum=0,
            description="check_lag fails when an unfinished shard is further behind than this",
        ),
        **layout_params(partition_by, target_file_mb),
        **decoding_params(decoding, dead_letter_threshold),
    }


def layout_params(partition_by: str, target_file_mb: int) -> dict[str, Param]:
    """How a new table is partitioned, and the size of the files the read writes."""
    return {
        "partition_by": Param(
            partition_by,
            type="string",
            description="a new table's partitions: day (of arrival; empty: the table's own, a new one's day), "
            "hour, day(FIELD), hour(FIELD), identity(FIELD) or none",
        ),
        "target_file_mb": Param(
            target_file_mb, type="integer", minimum=1, maximum=4096, description="each task's files roll at this size"
        ),
    }


def decoding_params(decoding: DecodeSettings, dead_letter_threshold: float) -> dict[str, Param]:
    """How records become rows (kinesis_batch.decoding.settings): raw bytes by default."""
    return {
        "decode": Param(decoding.decode, type="string", enum=list(DECODERS), description="raw bytes, or typed columns"),
        "schema": Param(
            decoding.schema or "",
            type="string",
            description="json: a JSON Schema file (empty: inferred, or the table's); avro: an Avro schema file; "
            "protobuf: a descriptor set; or glue://REGISTRY/SCHEMA",
        ),
        "message": Param(decoding.message or "", type="string", description="protobuf: the message name"),
        "decompress": Param(decoding.decompress, type="string", enum=list(DECOMPRESSION)),
        "transform": Param(decoding.transform or "", type="string", description="module:function, or cloudwatch-logs"),
        "dead_letter_output": Param(
            decoding.dead_letter_output or "", type="string", description="empty: OUTPUT_dead_letter, same format"
        ),
        "on_bad_record": Param(decoding.on_bad_record, type="string", enum=list(ON_BAD_RECORD)),
        "schema_evolution": Param(decoding.schema_evolution, type="string", enum=list(SCHEMA_EVOLUTION)),
        "dead_letter_threshold": Param(
            dead_letter_threshold,
            type="number",
            minimum=0,
            maximum=1,
            description="check_lag fails when more than this share of the last batch's records are dead letters",
        ),
    }


def catch_up_dag(
    dag_id: str,
    params: dict[str, Param],
    *,
    outlets: Sequence[Asset] = (),
    schedule: str | None = defaults.SCHEDULE,
    tags: Sequence[str] = (),
    doc_md: str | None = None,
) -> DAG:
    """One catch-up DAG (see the module docstring); ``outlets`` get an event when publish succeeds."""

    def make_run() -> CatchUpRun:
        context = get_current_context()
        dag_run = context["dag_run"]
        return catch_up_run(
            dict(context["params"]),
            dag_id=dag_run.dag_id,
            run_id=dag_run.run_id,
            until=context.get("data_interval_end"),
        )

    @dag(
        dag_id=dag_id,
        schedule=schedule,
        start_date=START,
        catchup=False,  # the consumer itself catches up
        max_active_runs=1,
        default_args=RETRIES,
        params=params,
        tags=["kinesis-batch", *tags],
        doc_md=doc_md,
    )
    def catch_up() -> None:
        @task
        def list_shards() -> dict[str, Any]:
            """List shards, build the lineage, and show what this run would read (reads nothing)."""
            plan = step(make_run().plan)
            return {
                "to_read": plan.shard_ids,
                "waves": len(plan.waves()),
                "finished": list(plan.finished),
                "leased_elsewhere": dict(plan.leased_elsewhere),
                "pending_recovery": dict(plan.pending),
            }

        @task(retries=0)
        def check_lag() -> dict[str, Any]:
            """Fail when an unfinished shard is behind by more than the threshold, or has unread
            records at retention risk: one line with the shards, their lag, and time to trimming."""
            from kinesis_batch.status import stream_status

            run = make_run()
            params = get_current_context()["params"]
            threshold = float(params["lag_threshold_seconds"])
            status = step(lambda: stream_status(run.kinesis, run.store.client, run.config.stream, run.config.table))
            judged = judge_lag(status, threshold)
            problems = [] if judged.ok else [judged.message()]
            checked: dict[str, Any] = {}
            if run.config.decoding.decoding:
                last = step(run.output.table_sink().last_batch)
                letters = judge_dead_letters(run.config.stream, last, float(params.get("dead_letter_threshold", 1.0)))
                problems += [] if letters.ok else [letters.message()]
                checked = {"dead_letters": letters.dead_letters, "records": letters.records}
            if problems:
                raise AirflowFailException("; ".join(problems))
            return {"max_lag_seconds": status["summary"]["max_lag_seconds"], "threshold_seconds": threshold, **checked}

        first, release = run_steps(make_run, outlets=outlets)
        list_shards() >> first
        release >> check_lag()

    built: DAG = catch_up()
    return built


__all__ = ["catch_up_dag", "catch_up_params"]
