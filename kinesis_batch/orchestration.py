"""What the orchestrators' adapters share (Airflow's DAGs and tasks, Dagster's assets, jobs and
sensor): the ids of a scheduled run, how its run is built, and how an error fails a task for
good. Their settings are the stream's (kinesis_batch.settings); backfills are kinesis_batch.backfill.

An orchestrated run's worker id and batch id derive from the orchestrator's run (a DAG run, a
Dagster run's root), so a retried task or a re-executed run resumes the same batch with the
same leases. The adapters add only where their settings come from, and their own way to fail.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from kinesis_batch.aws import S3Settings
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import KinesisBatchError, classify
from kinesis_batch.openlineage.origin import Origin
from kinesis_batch.run import CatchUpRun, Progress

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient

    from kinesis_batch.serverless.gathering import JobRunGathering
    from kinesis_batch.spark.engine import Engine
    from kinesis_batch.spark.place import ReadPlace


class AwsClients(Protocol):
    """Where an adapter's AWS clients come from: the Airflow hook, the Dagster resource."""

    def kinesis(self) -> KinesisClient: ...
    def dynamodb(self) -> DynamoDBClient: ...
    def glue(self) -> Any: ...
    def emr_serverless(self) -> Any: ...
    def s3(self) -> S3Settings: ...
    def aws_env(self) -> dict[str, str]: ...
    def sts_endpoint(self) -> str: ...


def run_ids(orchestrator: str, job: str, run_id: str, stamp: str = "") -> tuple[str, str]:
    """(worker id, batch id) for one orchestrated run: stable across its retries, unique per
    run. ``stamp`` (digits and ``T`` are kept) puts the run's time in the batch id."""
    digest = hashlib.sha256(f"{job}/{run_id}".encode()).hexdigest()[:10]
    stamp = re.sub(r"[^0-9T]", "", stamp)[:15] or "run"
    return f"{orchestrator}-{job}-{digest}", f"{job}-{stamp}-{digest}"


@contextmanager
def failing_permanently(fail: Callable[[str], BaseException]) -> Iterator[None]:
    """An error no retry can fix (``errors.classify``: bad input, bad state, a lost lease) is
    raised as ``fail(its one line)``, the orchestrator's way to fail for good; the others pass
    as they are, so the orchestrator's retries apply."""
    try:
        yield
    except KinesisBatchError as exc:
        if classify(exc).permanent:
            raise fail(str(exc)) from exc
        raise


def orchestrated_run(
    config: RunConfig,
    *,
    batch_id: str,
    aws: AwsClients,
    place: ReadPlace,
    progress: Progress = print,
    origin: Origin | None = None,
    spark: Callable[[], Engine] | None = None,
    gathering: JobRunGathering | None = None,
) -> CatchUpRun:
    """The CatchUpRun of an orchestrated run (``config`` carries its worker id, :func:`run_ids`),
    its sink (and dead-letter output) reaching S3 with the adapter's settings (pyarrow and
    deltalake would not find a connection's endpoint on their own), the Glue Schema Registry
    with its Glue client, a job run's read step with its EMR Serverless client; ``place``: where
    its read step runs, as the adapter decided it (kinesis_batch.spark.place), whose Spark the
    run's steps use unless ``spark`` is given; ``origin``: the orchestrator's run it is a child
    of, as OpenLineage names it; ``gathering``: a group's, for one job run of its streams' reads."""
    return CatchUpRun(
        config,
        kinesis=aws.kinesis(),
        dynamodb=aws.dynamodb(),
        spark=spark or place.engine(),
        progress=progress,
        run_id=batch_id,
        s3=aws.s3(),
        glue=aws.glue,
        emr_serverless=aws.emr_serverless,
        origin=origin,
        place=place,
        sts_endpoint=aws.sts_endpoint() if config.settings.role_arn else None,
        gathering=gathering,
    )


__all__ = ["AwsClients", "failing_permanently", "orchestrated_run", "run_ids"]
