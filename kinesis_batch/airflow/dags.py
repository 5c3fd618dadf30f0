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

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Asset, Param, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from kinesis_batch import defaults
from kinesis_batch.airflow.params import setting_param
from kinesis_batch.airflow.steps import run_steps
from kinesis_batch.airflow.tasks import catch_up_run, step
from kinesis_batch.alerts import judge_dead_letters, judge_lag
from kinesis_batch.run import CatchUpRun
from kinesis_batch.settings import AIRFLOW, offered

START = datetime(2026, 1, 1, tzinfo=UTC)
RETRIES = {"retries": 3, "retry_delay": timedelta(seconds=30), "retry_exponential_backoff": 2.0}


def catch_up_params(
    values: Mapping[str, Any], *, spark_conn_id: str = "", aws_conn_id: str = defaults.AWS_CONN_ID
) -> dict[str, Param]:
    """The form of a catch-up DAG: every stream setting the DAG offers (kinesis_batch.settings),
    with ``values`` (a stream's settings by name) as the defaults a manual trigger may change,
    and the DAG's own: the connections, ``allow_gaps`` and ``move_output``. No ``stream`` in
    ``values``: the form asks for one (and the DAG cannot be scheduled)."""
    params = {
        option.name: setting_param(option, values.get(option.name, option.default)) for option in offered(AIRFLOW)
    }
    return {
        **params,
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
            status = step(lambda: stream_status(run.kinesis, run.store.client, run.config.stream_id, run.config.table))
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
            return {"max_lag_seconds": status.max_lag_seconds, "threshold_seconds": threshold, **checked}

        first, release = run_steps(make_run, outlets=outlets)
        list_shards() >> first
        release >> check_lag()

    built: DAG = catch_up()
    return built


__all__ = ["catch_up_dag", "catch_up_params"]
