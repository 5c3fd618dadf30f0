"""A Dagster run as a kinesis-batch run: its ids, its CatchUpRun (catch-up or backfill, on the
same builder as Airflow's tasks: kinesis_batch.orchestration), and the one-line failure a retry
cannot fix. The asset, the backfill op and the failure sensor all build their run here, so the
sensor releases exactly what the failed run held.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NoReturn

import dagster as dg

from kinesis_batch import defaults, orchestration
from kinesis_batch.config import default_table, validate_stream_name
from kinesis_batch.decoding.settings import RAW, DecodeSettings
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError
from kinesis_batch.maintenance.settings import MaintainSettings
from kinesis_batch.orchestration import Backfill, RunRequest
from kinesis_batch.output import Output, Sink
from kinesis_batch.output.layout import PartitionBy
from kinesis_batch.run import CatchUpRun, RunReport
from kinesis_batch.stopping import say_on_stderr, stopping_on_signals

if TYPE_CHECKING:
    from kinesis_batch.dagster.config import BackfillConfig
    from kinesis_batch.dagster.resources import AwsClients, SparkResource

CATCH_UP = "catchup"
BACKFILL = "backfill"


@dataclass(frozen=True)
class StreamSettings:
    """One stream's consumer: its output, lease table, lag threshold, how it decodes (with the
    share of dead letters its check allows), how a new table is partitioned, and how the output
    is maintained (its files' target size, the retention, the size its check warns below)."""

    stream: str
    output: Output
    table: str = ""  # "" -> kinesis-batch-STREAM
    lag_threshold_seconds: float = defaults.LAG_THRESHOLD_SECONDS
    decoding: DecodeSettings = RAW
    dead_letter_threshold: float = defaults.DEAD_LETTER_THRESHOLD
    partition_by: str = ""  # "": the table's own layout (a new table's: day of arrival)
    maintenance: MaintainSettings = MaintainSettings()
    small_file_mb: float = defaults.SMALL_FILE_MB

    def __post_init__(self) -> None:
        validate_stream_name(self.stream)  # the output validated itself
        if self.partition_by:
            PartitionBy.parse(self.partition_by)
        if not self.table:
            object.__setattr__(self, "table", default_table(self.stream))
        if self.lag_threshold_seconds <= 0:
            raise IllegalArgumentError(f"lag_threshold_seconds must be positive, not {self.lag_threshold_seconds}")
        if not 0 <= self.dead_letter_threshold <= 1:
            raise IllegalArgumentError(
                f"dead_letter_threshold must be a share (0..1), not {self.dead_letter_threshold}"
            )

    def sink(self, aws: AwsClients) -> Sink:
        """The output, opened (S3 through ``aws``)."""
        return self.output.open(app=self.table, stream=self.stream, s3=aws.s3())


@dataclass(frozen=True)
class RunIds:
    worker_id: str
    batch_id: str


def run_ids(instance: dg.DagsterInstance, run: dg.DagsterRun, kind: str) -> RunIds:
    """From the run's root: a re-executed run (a new Dagster run of the same root) resumes the
    same batch with the same leases. The batch id carries the root run's creation time."""
    root = run.root_run_id or run.run_id
    record = instance.get_run_record_by_id(root)
    created = record.create_timestamp if record is not None else datetime.now(UTC)
    worker_id, batch_id = orchestration.run_ids("dagster", kind, root, stamp=created.strftime("%Y%m%dT%H%M%S"))
    return RunIds(worker_id, batch_id)


def failing_for_good() -> AbstractContextManager[None]:
    """Errors a retry cannot fix fail the step with the library's one line, without retries."""
    return orchestration.failing_permanently(lambda message: dg.Failure(description=message, allow_retries=False))


def catch_up_run(
    settings: StreamSettings,
    aws: AwsClients,
    ids: RunIds,
    *,
    spark: SparkResource | None = None,
    until: datetime | None = None,
    allow_gaps: bool = False,
    log: dg.DagsterLogManager | None = None,
) -> CatchUpRun:
    """The kinesis-batch run of one Dagster run (``spark`` None: a run that only tears down)."""
    with failing_for_good():
        return _run(_request(settings, spark, until=until, allow_gaps=allow_gaps), aws, ids, spark, log)


def backfill_run(
    settings: StreamSettings,
    aws: AwsClients,
    ids: RunIds,
    config: BackfillConfig,
    *,
    spark: SparkResource | None = None,
    log: dg.DagsterLogManager | None = None,
) -> tuple[CatchUpRun, Backfill]:
    """The backfill's run: its own lease table unless it moves the main checkpoints, its own
    output unless ``config.output`` names one, read up to ``config.end`` or the tip."""
    format = config.format.value if config.format else settings.output.format
    main_catalog = settings.output.catalog if format == settings.output.format else None
    with failing_for_good():
        request, plan = _request(settings, spark).backfill(
            ids.batch_id,
            format=format,
            output=config.output or "",
            catalog=config.catalog or main_catalog,
            end=config.end or "",
            move_main_checkpoints=config.move_main_checkpoints,
        )
        return _run(request, aws, ids, spark, log), plan


def run_all_steps(run: CatchUpRun, spark: SparkResource, aws: AwsClients, log: dg.DagsterLogManager) -> RunReport:
    """Every step of ``run`` in this process (leases renewed throughout, released in its
    ``finally``), the read too unless ``spark.submit``: then it is spark-submitted."""
    # Dagster terminates a run with SIGINT to its process: a clean stop, as the command line's.
    with failing_for_good(), stopping_on_signals(run.stop, timeout=defaults.STOP_TIMEOUT_SECONDS, say=say_on_stderr):
        if not spark.submit:
            return run.run()
        from kinesis_batch.spark.cluster import submitted_read

        with submitted_read(spark.cluster(), run.config, run.run_id, aws.aws_env(), log.info) as read:
            return run.run(read=read)


def _request(
    settings: StreamSettings, spark: SparkResource | None, *, until: datetime | None = None, allow_gaps: bool = False
) -> RunRequest:
    master = spark.master if spark else defaults.SPARK_MASTER
    return RunRequest(
        settings.stream,
        settings.output,
        table=settings.table,
        until=until,
        spark_master=master,
        allow_gaps=allow_gaps,
        decoding=settings.decoding,
        partition_by=settings.partition_by,
        target_file_mb=settings.maintenance.target_file_mb,
    )


def _run(
    request: RunRequest,
    aws: AwsClients,
    ids: RunIds,
    spark: SparkResource | None,
    log: dg.DagsterLogManager | None,
) -> CatchUpRun:
    return orchestration.orchestrated_run(
        request,
        worker_id=ids.worker_id,
        batch_id=ids.batch_id,
        aws=aws,
        spark=spark.context_factory() if spark else _no_spark,
        progress=log.info if log else print,
    )


def _no_spark() -> NoReturn:
    raise InvalidStateError("this step does not read: it has no Spark")
