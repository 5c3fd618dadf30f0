"""A Dagster run as a kinesis-batch run: its ids, its CatchUpRun (catch-up or backfill, on the
same builder as Airflow's tasks: kinesis_batch.orchestration), and the one-line failure a retry
cannot fix. The asset, the backfill op and the failure sensor all build their run here, so the
sensor releases exactly what the failed run held.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NoReturn

import dagster as dg

from kinesis_batch import defaults, orchestration
from kinesis_batch.backfill.plan import Backfill, plan_backfill
from kinesis_batch.config import RunConfig
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.maintenance.settings import MaintainSettings
from kinesis_batch.openlineage.origin import Origin, ParentRun, RunRef
from kinesis_batch.output import Output, Stored
from kinesis_batch.parsers import parse_time, validate_small_file_mb
from kinesis_batch.run import CatchUpRun, RunReport
from kinesis_batch.settings import StreamSettings
from kinesis_batch.stopping import say_on_stderr, stopping_on_signals

if TYPE_CHECKING:
    from kinesis_batch.dagster.config import BackfillConfig
    from kinesis_batch.dagster.resources import AwsClients, SparkResource
    from kinesis_batch.serverless.gathering import JobRunGathering
    from kinesis_batch.spark.engine import Engine
    from kinesis_batch.spark.place import ReadPlace

CATCH_UP = "catchup"
BACKFILL = "backfill"


@dataclass(frozen=True)
class Consumer:
    """One stream's consumer in Dagster: the stream's settings (kinesis_batch.settings), how the
    output is maintained, and the mean file size its check warns below."""

    settings: StreamSettings
    maintenance: MaintainSettings = MaintainSettings()
    small_file_mb: float = defaults.SMALL_FILE_MB

    def __post_init__(self) -> None:
        validate_small_file_mb(self.small_file_mb, setting="small_file_mb")

    @property
    def stream(self) -> str:
        return self.settings.stream

    @property
    def table(self) -> str:
        return self.settings.lease_table

    @property
    def output(self) -> Output:
        return self.settings.destination

    @property
    def decoding(self) -> DecodeSettings:
        return self.settings.decoding

    def sink(self, aws: AwsClients) -> Stored:
        """The output, opened (S3 through ``aws``)."""
        return self.output.open(app=self.table, stream=self.stream, s3=aws.s3())


#: The OpenLineage namespace a Dagster run is named in, as the parent of the run it drives.
LINEAGE_NAMESPACE = "dagster"


@dataclass(frozen=True)
class RunIds:
    """A Dagster run's ids in kinesis-batch: its worker, its batch, and its OpenLineage origin
    (the Dagster run the kinesis-batch run is a child of, under its root run)."""

    worker_id: str
    batch_id: str
    origin: Origin


def run_ids(instance: dg.DagsterInstance, run: dg.DagsterRun, kind: str) -> RunIds:
    """From the run's root: a re-executed run (a new Dagster run of the same root) resumes the
    same batch with the same leases. The batch id carries the root run's creation time."""
    root = run.root_run_id or run.run_id
    record = instance.get_run_record_by_id(root)
    created = record.create_timestamp if record is not None else datetime.now(UTC)
    worker_id, batch_id = orchestration.run_ids("dagster", kind, root, stamp=created.strftime("%Y%m%dT%H%M%S"))
    parent = ParentRun.of(
        RunRef(LINEAGE_NAMESPACE, run.job_name, run.run_id), RunRef(LINEAGE_NAMESPACE, run.job_name, root)
    )
    return RunIds(worker_id, batch_id, Origin(parent))


def for_stream(ids: RunIds, stream: str) -> RunIds:
    """A group's run's ids for one of its streams: a worker and a batch id of its own, in the same
    Dagster run (the same origin), stable across its re-executions as the run's are."""
    digest = hashlib.sha256(f"{ids.batch_id}/{stream}".encode()).hexdigest()[:6]
    return replace(ids, worker_id=f"{ids.worker_id}-{digest}", batch_id=f"{ids.batch_id}-{digest}")


def failing_for_good() -> AbstractContextManager[None]:
    """Errors a retry cannot fix fail the step with the library's one line, without retries."""
    return orchestration.failing_permanently(lambda message: dg.Failure(description=message, allow_retries=False))


def catch_up_run(
    consumer: Consumer,
    aws: AwsClients,
    ids: RunIds,
    *,
    spark: SparkResource | None = None,
    until: datetime | None = None,
    allow_gaps: bool = False,
    log: dg.DagsterLogManager | None = None,
    slot_share: int = 1,
    engines: Callable[[ReadPlace], Callable[[], Engine]] | None = None,
    gathering: JobRunGathering | None = None,
) -> CatchUpRun:
    """The kinesis-batch run of one Dagster run (``spark`` None: a run that only tears down);
    a group's (kinesis_batch.dagster.group): ``slot_share``, the runs beside it, ``engines``,
    the Spark session they share, and ``gathering``, the job run their job-run reads share."""
    with failing_for_good():
        config = _config(consumer, ids, spark, until=until, allow_gaps=allow_gaps, slot_share=slot_share)
        return _run(config, aws, ids, spark, log, engines, gathering)


def backfill_run(
    consumer: Consumer,
    aws: AwsClients,
    ids: RunIds,
    config: BackfillConfig,
    *,
    spark: SparkResource | None = None,
    log: dg.DagsterLogManager | None = None,
) -> tuple[CatchUpRun, Backfill]:
    """The backfill's run: its own lease table unless it moves the main checkpoints, its own
    output unless ``config.output`` names one, read up to ``config.end`` or the tip."""
    with failing_for_good():
        backfill, plan = plan_backfill(
            _config(consumer, ids, spark),
            ids.batch_id,
            format=config.format.value if config.format else "",
            output=config.output or "",
            catalog=config.catalog or None,
            until=parse_time(config.end, setting="end") if config.end else None,
            move_main_checkpoints=config.move_main_checkpoints,
        )
        return _run(backfill, aws, ids, spark, log), plan


def run_all_steps(run: CatchUpRun, spark: SparkResource, aws: AwsClients, log: dg.DagsterLogManager) -> RunReport:
    """Every step of ``run`` in this process (leases renewed throughout, released in its
    ``finally``), the read too unless its place is a cluster (``spark.submit``): then it is
    spark-submitted."""
    # Dagster terminates a run with SIGINT to its process: a clean stop, as the command line's.
    with failing_for_good(), stopping_on_signals(run.stop, timeout=defaults.STOP_TIMEOUT_SECONDS, say=say_on_stderr):
        cluster = run.place.cluster
        if cluster is None:
            return run.run()
        from kinesis_batch.spark.cluster import submitted_read

        with submitted_read(cluster, run.config, run.run_id, aws.aws_env(), log.info) as read:
            return run.run(read=read)


def _config(
    consumer: Consumer,
    ids: RunIds,
    spark: SparkResource | None,
    *,
    until: datetime | None = None,
    allow_gaps: bool = False,
    slot_share: int = 1,
) -> RunConfig:
    """The run's configuration: the stream's settings, Spark from the resource (its EMR
    Serverless application over the stream's ``emr_serverless``)."""
    settings = replace(
        consumer.settings,
        spark_master=spark.master if spark else defaults.SPARK_MASTER,
        spark_remote=spark.remote if spark else "",
        emr_serverless=(spark.job_run() or consumer.settings.emr_serverless) if spark else None,
    )
    return RunConfig(settings, worker_id=ids.worker_id, until=until, allow_gaps=allow_gaps, slot_share=slot_share)


def _run(
    config: RunConfig,
    aws: AwsClients,
    ids: RunIds,
    spark: SparkResource | None,
    log: dg.DagsterLogManager | None,
    engines: Callable[[ReadPlace], Callable[[], Engine]] | None = None,
    gathering: JobRunGathering | None = None,
) -> CatchUpRun:
    """The run, its read where the resource says (kinesis_batch.spark.place: ``submit`` brings
    the cluster); ``spark`` None: a run that only tears down, with no Spark at all; ``engines``:
    the session of the place, shared with other runs (a group's)."""
    from kinesis_batch.spark.place import ReadPlace

    place = ReadPlace.of(config, cluster=spark.cluster() if spark and spark.submit else None)
    return orchestration.orchestrated_run(
        config,
        batch_id=ids.batch_id,
        aws=aws,
        place=place,
        spark=(engines(place) if engines else None) if spark else _no_spark,
        progress=log.info if log else print,
        origin=ids.origin,
        gathering=gathering,
    )


def _no_spark() -> NoReturn:
    raise InvalidStateError("this step does not read: it has no Spark")
