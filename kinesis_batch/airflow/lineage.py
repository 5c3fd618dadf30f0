"""Where a DAG run's kinesis-batch run sits in Airflow's OpenLineage graph.

With ``apache-airflow-providers-openlineage`` installed and enabled, the provider sends an
OpenLineage run for the DAG run and one for each task try. The kinesis-batch run is a child of
the task that started it (:data:`STARTED_BY`: its parent is that try's run, as the provider's
``lineage_*`` macros name it) under the DAG run (the root). Its events come from three tasks
(START from the first, COMPLETE from the commit, FAIL from whichever failed): a run has one
parent, so the first task records it (an XCom) and the others name the same one. Without the
provider (or with it disabled), the parent is what the standard ``OPENLINEAGE_PARENT_*``
variables say, if anything. The DAG's file is the job's source code location.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kinesis_batch.openlineage.emit import warn
from kinesis_batch.openlineage.origin import Origin, ParentRun, RunRef

#: The task that starts a DAG run's kinesis-batch run (its first step, which takes the leases).
STARTED_BY = "acquire_leases"
#: The XCom of :data:`STARTED_BY` that records the run's parent.
PARENT_KEY = "openlineage_parent"


def current_origin() -> Origin | None:
    """:func:`run_origin` of the running task; None outside a task (the standard variables say)."""
    from airflow.sdk import get_current_context

    try:
        context = get_current_context()
    except RuntimeError:  # a run made outside a task: a test, a script calling the tasks' library
        return None
    return run_origin(context)


def run_origin(context: Any) -> Origin:
    """The origin of the run a task of ``context`` (a task's Airflow context) works on: the
    parent :data:`STARTED_BY` recorded, else (that task itself, or none recorded) this task's."""
    ti = context["ti"]
    parent: ParentRun | None = None
    try:
        recorded = ti.xcom_pull(task_ids=STARTED_BY, key=PARENT_KEY) if ti.task_id != STARTED_BY else None
        if recorded:
            parent = ParentRun.of(RunRef.parse(recorded["parent"]), RunRef.parse(recorded["root"]))
        else:
            parent = task_parent(ti)
    except Exception as exc:  # lineage never fails a run: a parent not named is one warning
        warn(exc)
    fileloc = getattr(context.get("dag"), "fileloc", None)
    return Origin(parent, Path(fileloc).absolute().as_uri() if fileloc else None)


def record_parent(context: Any, origin: Origin | None) -> None:
    """In :data:`STARTED_BY`: record the run's parent for the DAG run's other tasks."""
    if origin is not None and origin.parent is not None:
        value = {"parent": origin.parent.parent.id, "root": origin.parent.root.id}
        context["ti"].xcom_push(key=PARENT_KEY, value=value)


def task_parent(ti: Any) -> ParentRun | None:
    """This task try's OpenLineage run under its DAG run's, as the provider names them (its
    ``lineage_*`` macros); the standard variables' when the provider is absent or disabled."""
    try:
        from airflow.providers.openlineage import conf
        from airflow.providers.openlineage.plugins import macros as provided
    except ImportError:  # the provider is not installed: its events are not there to join
        return ParentRun.from_environ(os.environ)
    if conf.is_disabled():
        return ParentRun.from_environ(os.environ)
    macros: Any = provided  # its macros are untyped
    return ParentRun.of(
        RunRef(macros.lineage_job_namespace(), macros.lineage_job_name(ti), macros.lineage_run_id(ti)),
        RunRef(macros.lineage_root_job_namespace(ti), macros.lineage_root_job_name(ti), macros.lineage_root_run_id(ti)),
    )


__all__ = ["PARENT_KEY", "STARTED_BY", "current_origin", "record_parent", "run_origin", "task_parent"]
