"""What the orchestrators' adapters share (Airflow's DAGs and tasks, Dagster's assets, jobs and
sensor): the ids of a scheduled run, the run an adapter asks for and how it is built, a
backfill's lease table, output and start checkpoints, and how an error fails a task for good.

An orchestrated run's worker id and batch id derive from the orchestrator's run (a DAG run, a
Dagster run's root), so a retried task or a re-executed run resumes the same batch with the
same leases. The adapters add only where their settings come from, and their own way to fail.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from kinesis_batch import defaults, ownership
from kinesis_batch.aws import S3Settings
from kinesis_batch.backfill import backfill_table, seed, start_checkpoints
from kinesis_batch.binding import Outputs
from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.config import KEEP, NONE, RunConfig, default_table, parse_initial_position, parse_time
from kinesis_batch.decoding.settings import RAW, DecodeSettings
from kinesis_batch.errors import IllegalArgumentError, KinesisBatchError, classify
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.output import Output
from kinesis_batch.run import CatchUpRun, Progress
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient
    from pyspark import SparkContext

#: An orchestrated run's leases: each step renews them while it works, so they only have to
#: outlive the gaps between its steps when they run as separate tasks (Airflow: a task's start,
#: a retry's delay); and a dead worker's shards are free again this soon.
ORCHESTRATED_LEASE_SECONDS = defaults.LEASE_SECONDS


class AwsClients(Protocol):
    """Where an adapter's AWS clients come from: the Airflow hook, the Dagster resource."""

    def kinesis(self) -> KinesisClient: ...
    def dynamodb(self) -> DynamoDBClient: ...
    def glue(self) -> Any: ...
    def s3(self) -> S3Settings: ...
    def aws_env(self) -> dict[str, str]: ...


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


@dataclass(frozen=True)
class RunRequest:
    """One run as an adapter asks for it: the stream's consumer settings and this run's bound.
    Values keep the forms users write (``initial_position``, ``read_limits``), checked when the
    run is built."""

    stream: str
    output: Output
    table: str = ""  # "" -> kinesis-batch-STREAM
    until: datetime | None = None
    initial_position: str = defaults.INITIAL_POSITION
    lease_seconds: float = ORCHESTRATED_LEASE_SECONDS
    spark_master: str = defaults.SPARK_MASTER
    allow_gaps: bool = False
    read_limits: str = defaults.READ_LIMITS
    decoding: DecodeSettings = RAW
    partition_by: str = ""  # "": the table's own layout (a new table's: day of arrival)
    target_file_mb: int = defaults.TARGET_FILE_MB
    output_binding: str = KEEP  # MOVE: the lease table publishes to this output from now on

    def config(self, worker_id: str) -> RunConfig:
        return RunConfig(
            stream=self.stream,
            output=self.output.output,
            format=self.output.format,
            catalog=self.output.catalog,
            table=self.table,
            initial_position=parse_initial_position(self.initial_position),
            until=self.until,
            lease_seconds=self.lease_seconds,
            worker_id=worker_id,
            spark_master=self.spark_master,
            allow_gaps=self.allow_gaps,
            read_limits=ReadLimits.parse(self.read_limits),
            decoding=self.decoding,
            partition_by=self.partition_by or None,
            target_file_mb=self.target_file_mb,
            output_binding=self.output_binding,
        )

    def backfill(
        self,
        backfill_id: str,
        *,
        format: str,
        output: str = "",
        catalog: str | None = None,
        end: str = "",
        move_main_checkpoints: bool = False,
    ) -> tuple[RunRequest, Backfill]:
        """A backfill of this request's stream (see :func:`plan_backfill`), up to ``end`` (ISO
        8601) or the tip, as a request of its own."""
        plan = plan_backfill(
            stream=self.stream,
            main=self.output,
            backfill_id=backfill_id,
            format=format,
            output=output,
            table=self.table,
            until=parse_time(end, setting="end") if end else None,
            move_main_checkpoints=move_main_checkpoints,
        )
        request = replace(
            self,
            output=Output(format, plan.output, catalog),
            table=plan.table,
            until=plan.until,
            output_binding=NONE if move_main_checkpoints else KEEP,  # the main table keeps its own output
        )
        return request, plan


def orchestrated_run(
    request: RunRequest,
    *,
    worker_id: str,
    batch_id: str,
    aws: AwsClients,
    spark: Callable[[], SparkContext],
    progress: Progress = print,
) -> CatchUpRun:
    """The CatchUpRun of an orchestrated run, its sink (and dead-letter output) reaching S3 with
    the adapter's settings (pyarrow and deltalake would not find a connection's endpoint on
    their own), the Glue Schema Registry with its Glue client."""
    config = request.config(worker_id)
    return CatchUpRun(
        config,
        kinesis=aws.kinesis(),
        dynamodb=aws.dynamodb(),
        spark=spark,
        progress=progress,
        run_id=batch_id,
        sink=request.output.open_run(config, aws.s3()),
        glue=aws.glue,
    )


def backfill_output(main: Output, format: str, backfill_id: str) -> str:
    """A backfill's own table next to the main one, when the backfill names none: parquet
    ``ROOT-backfill-ID``, delta ``URI_backfill_ID``, iceberg ``NAMESPACE.TABLE_backfill_ID``
    (lower case, ``[a-z0-9_]``). The backfill must be in the main output's format to derive one."""
    if format != main.format:
        raise IllegalArgumentError(
            f"output: a {format} backfill needs its output named (the main output {main.output} is {main.format})"
        )
    if format == "parquet":
        return f"{main.output.rstrip('/')}-backfill-{backfill_id}"
    if format == "delta":
        return f"{main.output.rstrip('/')}_backfill_{backfill_id}"
    suffix = re.sub(r"[^a-z0-9_]", "_", backfill_id.lower())
    return f"{main.output}_backfill_{suffix}"


@dataclass(frozen=True)
class Backfill:
    """Where a backfill reads to and writes: its lease table (the main one when it moves the main
    checkpoints), its output, and its bound (None: the tip)."""

    table: str
    output: str
    until: datetime | None
    moves_main_checkpoints: bool


def plan_backfill(
    *,
    stream: str,
    main: Output,
    backfill_id: str,
    format: str,
    output: str = "",
    table: str = "",
    until: datetime | None = None,
    move_main_checkpoints: bool = False,
) -> Backfill:
    """A backfill's table and output: its own unless it moves the main checkpoints (table) or
    names one (output, else next to ``main``)."""
    main_table = table or default_table(stream)
    return Backfill(
        table=main_table if move_main_checkpoints else backfill_table(main_table, backfill_id),
        output=output or backfill_output(main, format, backfill_id),
        until=until,
        moves_main_checkpoints=move_main_checkpoints,
    )


def seed_backfill(run: CatchUpRun, *, main_table: str, start: str, shards: Iterable[str] = ()) -> dict[str, str]:
    """Create ``run``'s own lease table at the start checkpoints of the selected ``shards`` (all
    when empty) before it starts: ``start`` is ``trim_horizon``, ``at_timestamp=ISO8601``,
    ``run=RUN_ID`` (the main checkpoints before that run, from ``main_table``'s history) or
    ``after_sequence=N``. Returns shard -> start checkpoint. Checks every value before creating
    anything; creating is idempotent (a retried seed changes nothing)."""
    stream = run.config.stream
    main = LeaseStore(run.store.client, main_table)
    ownership.check(run.kinesis, main, stream)  # its history is read: it must be this stream's
    claim = ownership.check(run.kinesis, run.store, stream)
    lineage = Lineage.build(list_shards(run.kinesis, stream))
    history = HistoryTable(main.client, main.table_name) if main.table_exists() else None
    starts = start_checkpoints(start or defaults.BACKFILL_START, lineage, list(shards) or lineage.order, history)
    run.checkpoints.create_checkpoint_store_if_not_exists()
    outputs = Outputs.of(run.config)
    ownership.mark(run.store, claim, run.progress, outputs=(outputs.output, outputs.dead_letter_output))
    seed(run.store, lineage, starts)
    return {shard: str(checkpoint) for shard, checkpoint in starts.items()}


__all__ = [
    "ORCHESTRATED_LEASE_SECONDS",
    "AwsClients",
    "Backfill",
    "RunRequest",
    "backfill_output",
    "failing_permanently",
    "orchestrated_run",
    "plan_backfill",
    "run_ids",
    "seed_backfill",
]
