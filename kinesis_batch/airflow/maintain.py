"""The maintenance DAG, built for the DAG files: ``kinesis_maintain`` (the configured output) and
``kinesis_maintain__<stream>`` (one per entry of the streams file), daily by default.

maintain_output >> maintain_dead_letters >> check_files. Each maintenance runs beside the
stream's catch-up runs without waiting for them: their commits and its own retry each other
(kinesis_batch.maintenance), and one that gives way too often fails with one line and is
retried. ``maintain_dead_letters`` maintains a decoding stream's dead-letter output (the
``dead_letter_output`` param; empty: none). ``check_files`` warns in its log, one line, when
the recent partitions' files are small on average (below ``small_file_mb``): maintenance can
fix that only if it runs, and a warning that fails a run would page someone for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import DAG, Param, dag, get_current_context, task

from kinesis_batch import defaults
from kinesis_batch.airflow.dags import RETRIES, START
from kinesis_batch.airflow.hook import KinesisBatchHook
from kinesis_batch.airflow.params import setting_param
from kinesis_batch.airflow.steps import step_task, task_stop
from kinesis_batch.airflow.tasks import failing_fast
from kinesis_batch.aws import S3Settings
from kinesis_batch.bounds import NOT_NEGATIVE
from kinesis_batch.changes.settings import TOMBSTONE_HOURS
from kinesis_batch.maintenance.settings import MAINTAIN_OPTIONS
from kinesis_batch.output import Output, Stored
from kinesis_batch.output.formats import FORMATS
from kinesis_batch.routing.routes import ROUTE


def maintain_params(
    *,
    output: Output,
    aws_conn_id: str = defaults.AWS_CONN_ID,
    target_file_mb: int = defaults.TARGET_FILE_MB,
    retain_hours: int = defaults.RETAIN_HOURS,
    small_file_mb: float = defaults.SMALL_FILE_MB,
    dead_letter_output: str = "",
    tombstone_hours: float = TOMBSTONE_HOURS,
) -> dict[str, Param]:
    """The form of a maintenance DAG, with these defaults (the maintenance settings' fields
    drawn from their options, kinesis_batch.maintenance.settings)."""
    chosen = {"target_file_mb": target_file_mb, "retain_hours": retain_hours, "tombstone_hours": tombstone_hours}
    return {
        "format": Param(output.format, type="string", enum=list(FORMATS)),
        "output": Param(output.output, type="string", minLength=1, description="the output to maintain"),
        "catalog": Param(output.catalog or "", type="string", description="iceberg: a pyiceberg catalog name"),
        "dead_letter_output": Param(
            dead_letter_output, type="string", description="a decoding stream's dead-letter output (empty: none)"
        ),
        "aws_conn_id": Param(aws_conn_id, type="string"),
        **{each.name: setting_param(each, chosen[each.name]) for each in MAINTAIN_OPTIONS},
        "small_file_mb": Param(
            small_file_mb,
            type="number",
            **NOT_NEGATIVE.schema(),
            description="check_files warns below this mean file size",
        ),
    }


def maintain_dag(
    dag_id: str,
    params: dict[str, Param],
    *,
    schedule: str | None = defaults.MAINTAIN_SCHEDULE,
    tags: Sequence[str] = (),
    doc_md: str | None = None,
) -> DAG:
    """One maintenance DAG (see the module docstring)."""

    @dag(
        dag_id=dag_id,
        schedule=schedule,
        start_date=START,
        catchup=False,
        max_active_runs=1,
        default_args=RETRIES,
        params=params,
        tags=["kinesis-batch", "maintenance", *tags],
        doc_md=doc_md or __doc__,
    )
    def maintenance() -> None:
        @step_task()
        def maintain_output() -> dict[str, Any]:
            """Compact, expire, remove orphans; the report (also kept as the last maintenance)."""
            return _maintained(_params(), "output")

        @step_task()
        def maintain_dead_letters() -> dict[str, Any] | None:
            """The same for the dead-letter output, when the stream decodes."""
            params = _params()
            if not params.get("dead_letter_output") or ROUTE in params["output"]:  # a template's: with its tables
                return None
            return _maintained(params, "dead_letter_output")

        @task(retries=0)
        def check_files() -> dict[str, Any]:
            """The output's files now; a warning line when its recent partitions' are small."""
            from kinesis_batch.status import table_status

            params = _params()
            with failing_fast():
                status = table_status(_sink(params, "output"), small_file_mb=float(params["small_file_mb"]))
            if status.small_files:
                print(f"WARNING: {status.small_files}")
            return status.to_json()

        maintain_output() >> maintain_dead_letters() >> check_files()

    built: DAG = maintenance()
    return built


def _params() -> dict[str, Any]:
    return dict(get_current_context()["params"])


def _output(params: dict[str, Any], which: str) -> Output:
    with failing_fast():
        return Output(params.get("format") or defaults.FORMAT, params[which], params.get("catalog") or None)


def _s3(params: dict[str, Any]) -> S3Settings:
    return KinesisBatchHook(params.get("aws_conn_id") or defaults.AWS_CONN_ID).s3()


def _sink(params: dict[str, Any], which: str) -> Stored:
    with failing_fast():
        return _output(params, which).open(app="", stream="", s3=_s3(params))


def _maintained(params: dict[str, Any], which: str) -> dict[str, Any]:
    """The report; a routed stream's template: each of its tables', by URI."""
    from kinesis_batch.maintenance import MaintainSettings, maintain_each

    output = _output(params, which)
    with failing_fast():
        chosen = {each.name: params[each.name] for each in MAINTAIN_OPTIONS if each.name in params}
        settings = MaintainSettings(**chosen)
        tables = output.tables(app="", stream="", s3=_s3(params))
        reports = maintain_each(tables, settings, progress=print, stop=task_stop())
    if not output.routed:
        return reports[tables[0].uri].to_json()
    return {uri: report.to_json() for uri, report in reports.items()}


__all__ = ["maintain_dag", "maintain_params"]
