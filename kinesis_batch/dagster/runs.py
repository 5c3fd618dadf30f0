"""A Dagster run as a kinesis-batch run: its ids, its CatchUpRun (catch-up or backfill), and
the one-line failure a retry cannot fix. The asset, the backfill op and the failure sensor all
build their run here, so the sensor releases exactly what the failed run held.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import dagster as dg

from kinesis_batch import orchestration
from kinesis_batch.config import RunConfig, default_table, parse_time, validate_stream_name
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError, LeaseError
from kinesis_batch.orchestration import Backfill, Output
from kinesis_batch.run import CatchUpRun, Read, RunReport

if TYPE_CHECKING:
    from kinesis_batch.dagster.config import BackfillConfig
    from kinesis_batch.dagster.resources import AwsClients, SparkResource

CATCH_UP = "catchup"
BACKFILL = "backfill"


@dataclass(frozen=True)
class StreamSettings:
    """One stream's consumer: its output, lease table and lag threshold."""

    stream: str
    output: Output
    table: str = ""  # "" -> kinesis-batch-STREAM
    lag_threshold_seconds: float = 3600.0

    def __post_init__(self) -> None:
        validate_stream_name(self.stream)  # the output validated itself
        if not self.table:
            object.__setattr__(self, "table", default_table(self.stream))
        if self.lag_threshold_seconds <= 0:
            raise IllegalArgumentError(f"lag_threshold_seconds must be positive, not {self.lag_threshold_seconds}")


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


@contextmanager
def failing_for_good() -> Iterator[None]:
    """Bad arguments and bad state fail the step with the library's one line, without retries."""
    try:
        yield
    except (IllegalArgumentError, InvalidStateError, LeaseError) as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from exc


def catch_up_run(
    settings: StreamSettings,
    aws: AwsClients,
    ids: RunIds,
    *,
    spark: SparkResource | None = None,
    until: datetime | None = None,
    allow_gaps: bool = False,
    table: str = "",
    output: Output | None = None,
    log: dg.DagsterLogManager | None = None,
) -> CatchUpRun:
    """The kinesis-batch run of one Dagster run (``table`` and ``output``: a backfill's own)."""
    output = output or settings.output
    with failing_for_good():
        config = RunConfig(
            settings.stream,
            output=output.output,
            format=output.format,
            catalog=output.catalog,
            table=table or settings.table,
            until=until,
            worker_id=ids.worker_id,
            spark_master=spark.master if spark else "local[*]",
            allow_gaps=allow_gaps,
        )
        return orchestration.orchestrated_run(
            config,
            kinesis=aws.kinesis(),
            dynamodb=aws.dynamodb(),
            s3=aws.s3(),
            spark=spark.context_factory() if spark else _no_spark,
            batch_id=ids.batch_id,
            progress=log.info if log else print,
        )


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
    with failing_for_good():
        backfill = orchestration.plan_backfill(
            stream=settings.stream,
            main=settings.output,
            backfill_id=ids.batch_id,
            format=format,
            output=config.output or "",
            table=settings.table,
            until=parse_time(config.end, setting="end") if config.end else None,
            move_main_checkpoints=config.move_main_checkpoints,
        )
        main_catalog = settings.output.catalog if format == settings.output.format else None
        output = Output(format, backfill.output, config.catalog or main_catalog)
    run = catch_up_run(
        settings, aws, ids, spark=spark, until=backfill.until, table=backfill.table, output=output, log=log
    )
    return run, backfill


def run_all_steps(run: CatchUpRun, spark: SparkResource, aws: AwsClients, log: dg.DagsterLogManager) -> RunReport:
    """Every step of ``run`` in this process (leases renewed throughout, released in its
    ``finally``), the read too unless ``spark.submit``: then it is spark-submitted."""
    with _submitted_read(run, spark, aws, log) as read, failing_for_good():
        return run.run(read=read)


@contextmanager
def _submitted_read(
    run: CatchUpRun, spark: SparkResource, aws: AwsClients, log: dg.DagsterLogManager
) -> Iterator[Read | None]:
    if not spark.submit:
        yield None
        return
    from kinesis_batch.spark.cluster import submitted_read

    with tempfile.TemporaryDirectory(prefix="kinesis-batch-submit-") as scratch:
        with failing_for_good():  # spark-submit not found, credentials not resolved
            read = submitted_read(spark.cluster(), run.config, run.run_id, aws.aws_env(), log.info, Path(scratch))
        yield read


def _no_spark() -> NoReturn:
    raise InvalidStateError("this step does not read: it has no Spark")
