"""What the orchestrators' adapters share (Airflow's DAGs, Dagster's assets and jobs): the ids of
a scheduled run, its CatchUpRun, and a backfill's lease table, output and start checkpoints.

An orchestrated run's worker id and batch id derive from the orchestrator's run (a DAG run, a
Dagster run's root), so a retried task or a re-executed run resumes the same batch with the
same leases. The adapters add only how they get clients and settings, and how they fail.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kinesis_batch.aws import S3Settings
from kinesis_batch.backfill import backfill_table, seed, start_checkpoints
from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.config import RunConfig, default_table, validate_output
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.output import open_sink
from kinesis_batch.output.catalogs import DEFAULT_CATALOG
from kinesis_batch.output.place import is_s3
from kinesis_batch.run import CatchUpRun, Progress
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient
    from pyspark import SparkContext

#: An orchestrated run's leases: each step renews them while it works, so they only have to
#: outlive the gaps between its steps when they run as separate tasks (Airflow: a task's start,
#: a retry's delay); and a dead worker's shards are free again this soon.
ORCHESTRATED_LEASE_SECONDS = 300.0
DEFAULT_OUTPUT = "/tmp/kinesis-batch/output"


def run_ids(orchestrator: str, job: str, run_id: str, stamp: str = "") -> tuple[str, str]:
    """(worker id, batch id) for one orchestrated run: stable across its retries, unique per
    run. ``stamp`` (digits and ``T`` are kept) puts the run's time in the batch id."""
    digest = hashlib.sha256(f"{job}/{run_id}".encode()).hexdigest()[:10]
    stamp = re.sub(r"[^0-9T]", "", stamp)[:15] or "run"
    return f"{orchestrator}-{job}-{digest}", f"{job}-{stamp}-{digest}"


@dataclass(frozen=True)
class Output:
    """Where batches go: a format, its output (folder, table path or URI, NAMESPACE.TABLE) and,
    for iceberg, a pyiceberg catalog name (None: ``default``, or the embedded one)."""

    format: str = "parquet"
    output: str = DEFAULT_OUTPUT
    catalog: str | None = None

    def __post_init__(self) -> None:
        validate_output(self.format, self.output, self.catalog)

    @classmethod
    def of(cls, config: RunConfig) -> Output:
        """The output a run writes to."""
        return cls(config.format, config.output, config.catalog)

    @property
    def asset_uri(self) -> str:
        """The output as an asset (Airflow's Asset URI, Dagster's metadata): ``file:///absolute/root``,
        ``s3://bucket/prefix`` or ``iceberg://CATALOG/NAMESPACE.TABLE``."""
        if self.format == "iceberg":
            return f"iceberg://{self.catalog or DEFAULT_CATALOG}/{self.output}"
        if is_s3(self.output):
            return "s3://" + self.output.split("://", 1)[1].strip("/")
        return "file://" + str(Path(self.output.removeprefix("file://")).absolute())


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
    lineage = Lineage.build(list_shards(run.kinesis, run.config.stream))
    main = LeaseStore(run.store.client, main_table)
    history = HistoryTable(main.client, main.table_name) if main.table_exists() else None
    starts = start_checkpoints(start or "trim_horizon", lineage, list(shards) or lineage.order, history)
    run.checkpoints.create_checkpoint_store_if_not_exists()
    seed(run.store, lineage, starts)
    return {shard: str(checkpoint) for shard, checkpoint in starts.items()}


def orchestrated_run(
    config: RunConfig,
    *,
    kinesis: KinesisClient,
    dynamodb: DynamoDBClient,
    s3: S3Settings,
    spark: Callable[[], SparkContext],
    batch_id: str,
    progress: Progress = print,
) -> CatchUpRun:
    """The CatchUpRun of an orchestrated run, its sink reaching S3 with the orchestrator's
    settings (pyarrow and deltalake would not find a connection's endpoint on their own)."""
    sink = open_sink(
        config.format, config.output, app=config.table, stream=config.stream, catalog=config.catalog, s3=s3
    )
    return CatchUpRun(
        config, kinesis=kinesis, dynamodb=dynamodb, spark=spark, progress=progress, run_id=batch_id, sink=sink
    )


__all__ = [
    "DEFAULT_OUTPUT",
    "ORCHESTRATED_LEASE_SECONDS",
    "Backfill",
    "Output",
    "backfill_output",
    "orchestrated_run",
    "plan_backfill",
    "run_ids",
    "seed_backfill",
]
