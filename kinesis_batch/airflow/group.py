"""A group's DAG, ``kinesis_group__<group>``: one per ``[[groups]]`` table of the streams file
(dags/kinesis_streams.py), on the group's schedule.

run_group >> stream__<stream> (one per stream of the group)

- ``run_group`` runs every stream of the group in this task's process (kinesis_batch.run.group):
  one Spark session for all of them, each stream's run the one its own DAG would make (its
  entry's settings and ``aws_conn_id``, a worker and batch id of its own). Its XCom is each
  stream's outcome. It fails only when the group cannot run at all; Airflow's ``on_kill`` stops
  every stream's run as a stop does (kinesis_batch.stopping).
- ``stream__<stream>`` is that stream's outcome as a task: failed, for good, with the stream's
  one line when its run failed (the others' tasks succeed: a stream fails alone); succeeded
  otherwise, its output's Asset given an event when the run published. It runs whatever
  ``run_group`` ended as, so a group's run that died shows on every stream.

A stream in a group keeps its own ``kinesis_catchup__<stream>`` DAG, unscheduled (the group's
schedule reads it; trigger it by hand for a run of that stream alone).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Asset, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from kinesis_batch import defaults, orchestration
from kinesis_batch.airflow.dags import START
from kinesis_batch.airflow.hook import KinesisBatchHook
from kinesis_batch.airflow.steps import step_task, task_stop
from kinesis_batch.airflow.streams import StreamEntry
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.run.group import SharedEngines, StreamRun, in_a_group, local_share, run_group
from kinesis_batch.serverless.gathering import JobRunGathering
from kinesis_batch.stopping import StopRequest
from kinesis_batch.streams_file import StreamGroup

RUN_GROUP = "run_group"


def group_dag_id(group: str) -> str:
    return "kinesis_group__" + re.sub(r"[^A-Za-z0-9_.-]", "_", group)


def stream_task_id(stream: str) -> str:
    return "stream__" + re.sub(r"[^A-Za-z0-9_.-]", "_", stream)


def group_dag(group: StreamGroup, entries: Mapping[str, StreamEntry], broken: Mapping[str, str]) -> DAG:
    """The group's DAG; ``entries``: the streams file's entries by stream; ``broken``: stream ->
    the line of an entry that does not read (or is missing): that stream's task fails with it."""
    dag_id = group_dag_id(group.name)
    outlets = {
        stream: Asset(
            entries[stream].settings.destination.asset_uri, uri=entries[stream].settings.destination.asset_uri
        )
        for stream in group.streams
        if stream in entries
    }

    @dag(
        dag_id=dag_id,
        schedule=group.schedule,
        start_date=START,
        catchup=False,
        max_active_runs=1,
        default_args={"retries": 0},  # a stream that failed is run again by the next run, from its checkpoints
        tags=["kinesis-batch", f"group:{group.name}", *(f"stream:{stream}" for stream in group.streams)],
        doc_md=f"Catches up the streams of group **{group.name}** in one run, {group.schedule}: "
        + ", ".join(f"`{stream}`" for stream in group.streams),
    )
    def catch_up_group() -> None:
        @step_task(task_id=RUN_GROUP, execution_timeout=timedelta(hours=2))
        def run() -> dict[str, Any]:
            """Every stream of the group, side by side in this process; each one's outcome."""
            context = get_current_context()
            dag_run = context["dag_run"]
            stop = task_stop() or StopRequest()
            job_runs = [e.settings.stream for e in entries.values() if e.settings.emr_serverless is not None]
            gathering = JobRunGathering(group.name, job_runs, progress=print)
            runs = _stream_runs(
                group,
                entries,
                broken,
                dag_run.dag_id,
                dag_run.run_id,
                context.get("data_interval_end"),
                stop,
                gathering,
            )
            report = run_group(group.name, runs, at_once=defaults.STREAMS_AT_ONCE, stop=stop, gathering=gathering)
            print(report.summary())
            return {outcome["stream"]: outcome for outcome in report.to_json()["streams"]}

        ran = run()
        for stream in group.streams:
            outcome_task(stream, outlets.get(stream)).override(task_id=stream_task_id(stream))().set_upstream(ran)

    built: DAG = catch_up_group()
    return built


def outcome_task(stream: str, outlet: Asset | None) -> Any:
    @task(trigger_rule="all_done", retries=0, outlets=[outlet] if outlet else [])
    def outcome() -> dict[str, Any]:
        """The stream's outcome in the group's run: its one line when it failed."""
        context = get_current_context()
        outcomes = context["ti"].xcom_pull(task_ids=RUN_GROUP) or {}
        said = outcomes.get(stream)
        if said is None:
            raise AirflowFailException(f"{stream}: the group's run ended before this stream's outcome was known")
        if said.get("error"):
            raise AirflowFailException(f"{stream}: {said['error']}")
        if outlet is not None:
            context["outlet_events"][outlet].extra = {
                "published": said["published"], "batch_id": said["batch_id"], "records": said["records"]
            }  # fmt: skip
        return {key: said[key] for key in ("run_id", "published", "records", "seconds")}

    return outcome


def _stream_runs(
    group: StreamGroup,
    entries: Mapping[str, StreamEntry],
    broken: Mapping[str, str],
    dag_id: str,
    run_id: str,
    until: Any,
    stop: StopRequest,
    gathering: JobRunGathering,
) -> dict[str, StreamRun]:
    engines = SharedEngines()
    share = local_share(defaults.STREAMS_AT_ONCE, group.streams, gathering)

    def run_of(stream: str) -> StreamRun:
        def run() -> Any:
            entry = entries.get(stream)
            if entry is None:
                raise IllegalArgumentError(broken.get(stream) or f"group {group.name!r}: {stream!r} has no entry")
            in_a_group(entry.settings)
            if entry.spark_conn_id:
                raise IllegalArgumentError(
                    "spark_conn_id: a group's streams share the group's Spark (its run's worker): run it alone"
                )
            worker_id, batch_id = orchestration.run_ids(
                "airflow", dag_id, f"{run_id}/{stream}", stamp=run_id.split("__")[-1]
            )
            config = RunConfig(entry.settings, worker_id=worker_id, until=until, slot_share=share)
            from kinesis_batch.airflow.lineage import current_origin
            from kinesis_batch.spark.place import ReadPlace

            place = ReadPlace.of(config)
            caught_up = orchestration.orchestrated_run(
                config,
                batch_id=batch_id,
                aws=KinesisBatchHook(entry.aws_conn_id or defaults.AWS_CONN_ID),
                place=place,
                progress=lambda line: print(f"{stream}: {line}"),
                origin=current_origin(),
                spark=engines.of(place),
                gathering=gathering,
            )
            caught_up.stop = stop
            return caught_up.run()

        return run

    return {stream: run_of(stream) for stream in group.streams}


__all__ = ["group_dag", "group_dag_id", "stream_task_id"]
