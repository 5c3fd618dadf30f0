"""The tasks both DAGs share: one task per step of a catch-up run, the release as a teardown."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from airflow.sdk import get_current_context, task

from kinesis_batch.airflow.tasks import published_event, read_step, step
from kinesis_batch.run import CatchUpRun


def run_steps(make_run: Callable[[], CatchUpRun], *, outlets: Sequence[Any] = ()) -> tuple[Any, Any]:
    """Add acquire_leases >> run_spark_job >> publish >> commit_checkpoints >> release_leases to
    the DAG being defined; ``make_run`` builds the DAG run's CatchUpRun inside each task, and
    the tasks between taking the leases and releasing them renew them while they work;
    ``outlets`` (Assets) get an event when publish succeeds.
    Returns (first task, teardown) so the caller can put its own tasks in front."""

    @task
    def acquire_leases() -> dict[str, Any]:
        """Recover unfinished batches, plan, take the leases and mark them with this run's batch."""
        recovered, plan, elsewhere = step(make_run().start)
        return {"recovered": recovered, "shards": plan.shard_ids, "leased_elsewhere": elsewhere}

    @task
    def run_spark_job() -> None:
        """Read every held shard into the batch's staging: local Spark, or spark-submit to the
        cluster of the ``spark_conn_id`` param."""
        read_step(make_run(), dict(get_current_context()["params"]))

    @task(outlets=list(outlets))
    def publish() -> bool:
        """Publish the batch in the output's one atomic step; each Asset's event says what was
        published (``published`` is false when there was nothing new) and where."""
        run = make_run()
        with run.renewing():
            published: bool = step(run.publish)
        events = get_current_context()["outlet_events"]
        for asset in outlets:
            events[asset].extra = published_event(run, published, asset.uri)
        return published

    @task
    def commit_checkpoints() -> int:
        run = make_run()
        with run.renewing():
            moved: int = step(run.commit)
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
