"""The PySpark part of a run: one task per shard range, rows written as Parquet to staging.

Executors read with the library's ShardReader and hand rows to the JVM as Arrow record batches
(``mapInArrow``), a bounded number of rows at a time: no task holds a shard's backlog. Each
task, once its shard is read, writes what it read (last sequence / sub-sequence number,
records, SHARD_END reached: the reader's ReadResult) to ``<staging>/_results/<shard>.json``; a
retried task rewrites it.

The driver passes Kinesis endpoint and region in the task spec: Python workers do not see
environment changes made in the driver after the JVM started.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kinesis_batch.aws import kinesis_client
from kinesis_batch.checkpoints.model import Checkpoint
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.output.batches import write_atomically
from kinesis_batch.shards.model import Shard
from kinesis_batch.shards.positions import EndBound
from kinesis_batch.shards.reader import ReadLimits, ReadResult, ShardReader

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient
    from pyspark.sql import SparkSession

ROWS_PER_ARROW_BATCH = 5_000

ARROW_SCHEMA = pa.schema(
    [
        ("shard_id", pa.string()),
        ("sequence_number", pa.string()),
        ("sub_sequence_number", pa.int64()),
        ("partition_key", pa.string()),
        ("data", pa.binary()),
        ("approximate_arrival_timestamp", pa.timestamp("us", tz="UTC")),
        ("lineage_depth", pa.int32()),
    ]
)
SPARK_SCHEMA = (
    "shard_id string, sequence_number string, sub_sequence_number bigint, partition_key string, "
    "data binary, approximate_arrival_timestamp timestamp, lineage_depth int"
)


@dataclass(frozen=True)
class TaskSpec:
    """One task's work, as JSON-able values."""

    stream: str
    shard_id: str
    closed: bool
    depth: int
    start: dict[str, Any]  # a checkpoint as CommitRecord JSON has it
    until: str | None
    results_dir: str
    endpoint_url: str | None
    region: str | None
    limits: dict[str, Any]

    @classmethod
    def for_range(
        cls,
        config: RunConfig,
        kinesis: KinesisClient,
        shard_id: str,
        closed: bool,
        depth: int,
        start: Checkpoint,
        until: datetime | None,
        results_dir: Path,
    ) -> TaskSpec:
        return cls(
            stream=config.stream,
            shard_id=shard_id,
            closed=closed,
            depth=depth,
            start=start.to_json(),
            until=until.isoformat() if until else None,
            results_dir=str(results_dir),
            endpoint_url=kinesis.meta.endpoint_url,
            region=kinesis.meta.region_name,
            limits=asdict(config.read_limits),
        )


def read_task(specs: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: each input row is a TaskSpec as JSON."""
    for batch in specs:
        for text in batch.column("spec").to_pylist():
            for rows in _read_one(TaskSpec(**json.loads(text))):
                yield rows
                _crash_point("reading")  # rows handed to Spark, task not finished


def _read_one(spec: TaskSpec) -> Iterator[pa.RecordBatch]:
    import boto3

    start = Checkpoint.from_json(spec.start).start_position()
    if start is None:  # planning never plans a finished shard
        raise InvalidStateError(f"shard {spec.shard_id} is already at SHARD_END")
    client = kinesis_client(boto3.Session(region_name=spec.region), endpoint_url=spec.endpoint_url)
    shard = Shard(spec.shard_id, ending_sequence_number="0" if spec.closed else None)
    end = EndBound(until=datetime.fromisoformat(spec.until) if spec.until else None)
    # Gaps are reported, not raised, here: the driver decides (fail, or --allow-gaps).
    limits = ReadLimits(**spec.limits)
    reader = ShardReader(client, spec.stream, shard, start, end, limits=limits, allow_gaps=True)
    columns: dict[str, list[Any]] = {name: [] for name in ARROW_SCHEMA.names}
    for record in reader:
        columns["shard_id"].append(record.shard_id)
        columns["sequence_number"].append(record.sequence_number)
        columns["sub_sequence_number"].append(record.sub_sequence_number)
        columns["partition_key"].append(record.partition_key)
        columns["data"].append(record.data)
        columns["approximate_arrival_timestamp"].append(record.approximate_arrival_timestamp)
        if len(columns["data"]) >= ROWS_PER_ARROW_BATCH:
            yield _batch(columns, spec.depth)
            columns = {name: [] for name in ARROW_SCHEMA.names}
    if columns["data"]:
        yield _batch(columns, spec.depth)
    _write_result(Path(spec.results_dir), reader.result())


def _crash_point(step: str) -> None:
    """See CatchUpRun.crash_point. pyspark's worker daemon has a process group of its own; the
    run's group is the session the crash tests start the command in (driver and JVM)."""
    if os.environ.get("KINESIS_BATCH_CRASH_AT") == step:
        import signal

        os.killpg(os.getsid(0), signal.SIGKILL)


def _batch(columns: dict[str, list[Any]], depth: int) -> pa.RecordBatch:
    columns["lineage_depth"] = [depth] * len(columns["data"])
    return pa.RecordBatch.from_pydict(columns, schema=ARROW_SCHEMA)


def _write_result(results_dir: Path, result: ReadResult) -> None:
    write_atomically(results_dir / f"{result.shard_id}.json", json.dumps(asdict(result)))


def read_results(results_dir: Path) -> dict[str, ReadResult]:
    """What each task read (the reader's own ReadResult), by shard."""
    if not results_dir.exists():
        return {}
    return {
        path.stem: ReadResult(**json.loads(path.read_text()))
        for path in results_dir.glob("*.json")
        if not path.name.startswith(".")
    }


def run_wave(spark: SparkSession, specs: list[TaskSpec], staging: str) -> None:
    """Read every spec's shard in one Spark job (one task each) and append Parquet to ``staging``."""
    if not specs:
        return
    rows = [(json.dumps(asdict(spec)),) for spec in specs]
    frame = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), "spec string")
    frame.mapInArrow(read_task, SPARK_SCHEMA).write.mode("append").parquet(staging)


def spark_session(master: str = "local[*]", app_name: str = "kinesis-batch") -> SparkSession:
    """The embedded default: a local session; on a cluster spark-submit provides the master."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Workers must run this interpreter (its packages), not whatever python3 is first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",  # its bars would interleave with our progress lines
        "spark.sql.session.timeZone": "UTC",
        "spark.speculation": "false",  # a speculative duplicate would read the shard twice
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
    }.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def default_spark(master: str) -> Callable[[], SparkSession]:
    """A lazily created session (planning-only runs never start a JVM)."""
    session: list[SparkSession] = []

    def get() -> SparkSession:
        if not session:
            session.append(spark_session(master))
        return session[0]

    return get
