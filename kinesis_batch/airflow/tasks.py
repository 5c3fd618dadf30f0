"""What the DAGs' tasks do, on the same library calls as the command line and Dagster
(kinesis_batch.orchestration): a DAG run's params become a run configuration, and its run.

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
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from airflow.sdk.exceptions import AirflowFailException

from kinesis_batch import defaults, orchestration
from kinesis_batch.airflow.hook import KinesisBatchHook
from kinesis_batch.backfill.plan import Backfill, plan_backfill
from kinesis_batch.backfill.seed import seed_backfill as seed
from kinesis_batch.config import KEEP, MOVE, RunConfig
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.output import Output
from kinesis_batch.parsers import parse_time
from kinesis_batch.run import CatchUpRun
from kinesis_batch.settings import NAMES, StreamSettings, as_field_message

if TYPE_CHECKING:
    from kinesis_batch.spark.cluster import SparkCluster

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
    stop owes (CatchUpRun.honouring_stop), and fails with its one line, which the run's
    OpenLineage FAIL (or ABORT) event carries when lineage is configured."""
    return step(lambda: run.honouring_stop(call))


def catch_up_run(params: dict[str, Any], *, dag_id: str, run_id: str, until: datetime | None) -> CatchUpRun:
    """The run for this DAG run, from its params: the stream's settings (kinesis_batch.settings),
    and ``allow_gaps``, ``move_output``, ``aws_conn_id``."""
    return _run(_config(params, dag_id, run_id, until), params, dag_id, run_id)


def backfill_run(params: dict[str, Any], *, dag_id: str, run_id: str, main: Output) -> CatchUpRun:
    """The backfill's run: its own lease table unless it moves the main checkpoints, and its own
    output unless the ``output`` param names one (derived from ``main``, the main output); read
    up to ``end`` (ISO 8601) or the tip."""
    return _run(_backfill(params, dag_id, run_id, main)[0], params, dag_id, run_id)


def seed_backfill(params: dict[str, Any], *, dag_id: str, run_id: str, main: Output) -> dict[str, str]:
    """Check the form's values and create the backfill's lease table at its start checkpoints.
    Returns shard -> start checkpoint (empty when the backfill moves the main checkpoints)."""
    config, plan = _backfill(params, dag_id, run_id, main)
    run = _run(config, params, dag_id, run_id)
    if plan.moves_main_checkpoints:
        return {}
    with failing_fast():
        return seed(run, plan, start=params.get("start") or "", shards=params.get("shards") or ())


def _backfill(params: dict[str, Any], dag_id: str, run_id: str, main: Output) -> tuple[RunConfig, Backfill]:
    """The backfill's configuration and plan: the main consumer's settings (the stream's entry
    in the streams file, else ``main``'s output; with what the form changed:
    kinesis_batch.airflow.backfill), the form's ``format``, ``output``, ``catalog``, ``end`` and
    ``move_main_checkpoints``."""
    from kinesis_batch.airflow.backfill import main_settings
    from kinesis_batch.airflow.streams import read_streams, streams_file

    with failing_fast():
        entries = {entry.stream: entry.settings for entry in read_streams(streams_file())[0]}
        form = main_settings(params, entries, main)
        end = params.get("end") or ""
        return plan_backfill(
            _config(form, dag_id, run_id),
            run_ids(dag_id, run_id)[1],
            format=params.get("format") or "",
            output=params.get("output") or "",
            catalog=params.get("catalog") or None,
            until=parse_time(end, setting="end") if end else None,
            move_main_checkpoints=bool(params.get("move_main_checkpoints")),
        )


def read_step(run: CatchUpRun, params: dict[str, Any]) -> None:
    """The Spark step, with the run's leases renewed in this process while it reads, where the
    run's place says (kinesis_batch.spark.place): here, on Spark Connect, as an EMR Serverless job
    run, or spark-submitted to the cluster of the ``spark_conn_id`` param's Spark connection (a
    lost lease kills the submit)."""
    cluster = run.place.cluster
    if cluster is None:
        stopping_step(run, renewed(run, run.read))
        return
    from kinesis_batch.spark.cluster import submitted_read

    with submitted_read(cluster, run.config, run.run_id, _hook(params).aws_env(), print) as read:
        stopping_step(run, renewed(run, lambda: run.read_elsewhere(read)))


def _cluster(params: dict[str, Any]) -> SparkCluster | None:
    """The cluster of the ``spark_conn_id`` param's Spark connection (None: no connection named)."""
    conn_id = params.get("spark_conn_id")
    if not conn_id:
        return None
    from airflow.sdk import BaseHook

    from kinesis_batch.spark.cluster import SparkCluster

    connection = BaseHook.get_connection(conn_id)
    return SparkCluster.from_connection(connection.host, connection.port, connection.extra_dejson)


def published_event(run: CatchUpRun, published: bool, asset_uri: str) -> dict[str, Any]:
    """The extra of the publish task's Asset event: what this run published, and where. The
    Asset is the configured output; ``output`` says when a run's params pointed elsewhere."""
    record = run.output.committed(run.run_id) if published else None
    output = run.config.destination.asset_uri
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


def _config(params: dict[str, Any], dag_id: str, run_id: str, until: datetime | None = None) -> RunConfig:
    """A DAG run's configuration: the stream's settings among its params (an empty value: not
    set), its worker id, bound, gaps and output binding. A bad value fails the task for good,
    naming the param."""
    with failing_fast():
        try:
            settings = StreamSettings.from_mapping({name: params[name] for name in NAMES if name in params})
        except IllegalArgumentError as exc:
            raise IllegalArgumentError(as_field_message(str(exc))) from exc
        return RunConfig(
            settings,
            worker_id=run_ids(dag_id, run_id)[0],
            until=until,
            allow_gaps=bool(params.get("allow_gaps")),
            output_binding=MOVE if params.get("move_output") else KEEP,
        )


def _run(config: RunConfig, params: dict[str, Any], dag_id: str, run_id: str) -> CatchUpRun:
    """The run, reaching AWS (and the table sinks S3) through the ``aws_conn_id`` connection, a
    child of the task that started it in Airflow's lineage (kinesis_batch.airflow.lineage)."""
    from kinesis_batch.airflow.lineage import current_origin
    from kinesis_batch.spark.place import ReadPlace

    with failing_fast():
        return orchestration.orchestrated_run(
            config,
            batch_id=run_ids(dag_id, run_id)[1],
            aws=_hook(params),
            place=ReadPlace.of(config, cluster=_cluster(params)),
            origin=current_origin(),
        )


def _hook(params: dict[str, Any]) -> KinesisBatchHook:
    return KinesisBatchHook(params.get("aws_conn_id") or defaults.AWS_CONN_ID)
