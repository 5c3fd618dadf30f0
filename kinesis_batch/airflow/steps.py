"""The tasks both DAGs share: one task per step of a catch-up run, the release as a teardown.

The steps that hold the run's leases are tasks of :class:`StepOperator`: Airflow calls its
``on_kill`` when it stops the task (marked failed, timed out, its worker shutting down: SIGTERM
to the task), which asks the task's run to stop (kinesis_batch.stopping), as SIGTERM stops the
command line: the read cancelled, an unpublished batch discarded (a publish under way finishes
and commits), the leases released, the task failed with the one line.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from typing import Any

from airflow.providers.standard.decorators.python import _PythonDecoratedOperator
from airflow.sdk import get_current_context, task
from airflow.sdk.bases.decorator import TaskDecorator, task_decorator_factory

from kinesis_batch.airflow.lineage import STARTED_BY, record_parent
from kinesis_batch.airflow.tasks import published_event, read_step, renewed, step, stopping_step
from kinesis_batch.run import CatchUpRun
from kinesis_batch.stopping import StopRequest


class StepOperator(_PythonDecoratedOperator):
    """A ``@task`` whose ``on_kill`` asks the run it works on to stop (a fresh request per
    execution: ``dag.test()`` runs every task in one process)."""

    custom_operator_name = "@task"

    def execute(self, context: Any) -> Any:
        self.stop = StopRequest()
        return super().execute(context)

    def on_kill(self) -> None:
        stop: StopRequest | None = getattr(self, "stop", None)
        if stop is not None:
            stop.request(signal.SIGTERM)


def step_task(**kwargs: Any) -> TaskDecorator:
    """``@task(**kwargs)`` of a :class:`StepOperator`."""
    return task_decorator_factory(decorated_operator_class=StepOperator, **kwargs)


def task_stop() -> StopRequest | None:
    """The stop request of the running task (None: not a StepOperator's)."""
    stop = getattr(get_current_context()["task"], "stop", None)
    return stop if isinstance(stop, StopRequest) else None


def stoppable(make_run: Callable[[], CatchUpRun]) -> CatchUpRun:
    """The DAG run's run, stopped by this task's ``on_kill``."""
    run = make_run()
    run.stop = task_stop() or run.stop
    return run


def run_steps(make_run: Callable[[], CatchUpRun], *, outlets: Sequence[Any] = ()) -> tuple[Any, Any]:
    """Add acquire_leases >> run_spark_job >> publish >> commit_checkpoints >> release_leases to
    the DAG being defined; ``make_run`` builds the DAG run's CatchUpRun inside each task, and
    the tasks between taking the leases and releasing them renew them while they work;
    ``outlets`` (Assets) get an event when publish succeeds.
    Returns (first task, teardown) so the caller can put its own tasks in front."""

    @step_task(task_id=STARTED_BY)
    def acquire_leases() -> dict[str, Any]:
        """Recover unfinished batches, plan, take the leases and mark them with this run's batch."""
        run = stoppable(make_run)
        record_parent(get_current_context(), run.observer.origin)  # for the run's later events
        recovered, plan, elsewhere = stopping_step(run, run.start)
        return {"recovered": recovered, "shards": plan.shard_ids, "leased_elsewhere": elsewhere}

    @step_task()
    def run_spark_job() -> None:
        """Read every held shard into the batch's staging: local Spark, or spark-submit to the
        cluster of the ``spark_conn_id`` param."""
        read_step(stoppable(make_run), dict(get_current_context()["params"]))

    @step_task(outlets=list(outlets))
    def publish() -> bool:
        """Publish the batch in the output's one atomic step; each Asset's event says what was
        published (``published`` is false when there was nothing new) and where."""
        run = stoppable(make_run)
        published: bool = stopping_step(run, renewed(run, run.publish))
        events = get_current_context()["outlet_events"]
        for asset in outlets:
            events[asset].extra = published_event(run, published, asset.uri)
        return published

    @step_task()
    def commit_checkpoints() -> int:
        """Move the checkpoints to the published batch's ends; then its metrics (--metrics) and
        the run's OpenLineage COMPLETE (the commit step's own)."""
        run = stoppable(make_run)
        moved: int = stopping_step(run, renewed(run, run.commit))
        return moved

    @task
    def release_leases() -> list[str]:
        released: list[str] = step(make_run().finish)
        return released

    acquired = acquire_leases()
    # An XComArg stands for its task here, as in Airflow's own examples; the stub says operator.
    release = release_leases().as_teardown(setups=acquired)  # type: ignore[arg-type]
    acquired >> run_spark_job() >> publish() >> commit_checkpoints() >> release
    return acquired, release
