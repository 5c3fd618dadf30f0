"""The PySpark part of a run: one task per shard range; Spark schedules, the tasks write.

Each task reads its shard with the library's ShardReader and writes the rows itself with
pyarrow, a row group of bounded size at a time, into one Parquet file of its own in the sink's
data place (``part-<shard>-<attempt>.parquet``; local, or S3 through pyarrow's S3 file system),
visible only once complete: no task holds a shard's backlog, no row crosses into the JVM or the
driver, and no file system is shared between executors and driver. A task returns what it
read (the reader's ReadResult) and the name of its file; the driver writes those to the
batch's ``_results/<shard>.json`` from the attempts Spark reports successful, and deletes files
no result names (failed or lost attempts), so a batch holds exactly one file per shard.

The driver passes Kinesis and S3 endpoints and region in the task spec: Python workers do not
see environment changes made in the driver after the JVM started.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kinesis_batch.aws import kinesis_client
from kinesis_batch.checkpoints.model import Checkpoint
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.output.place import Place
from kinesis_batch.output.tables import BATCH_ID, ROW_SCHEMA
from kinesis_batch.shards.model import Shard
from kinesis_batch.shards.positions import EndBound
from kinesis_batch.shards.reader import ReadLimits, ReadResult, ShardReader

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient
    from pyspark.sql import SparkSession

ROWS_PER_ARROW_BATCH = 10_000  # also the Parquet row group: about 10 MB of 1 KiB records


@dataclass(frozen=True)
class TaskSpec:
    """One task's work, as JSON-able values."""

    stream: str
    shard_id: str
    closed: bool
    depth: int
    start: dict[str, Any]  # a checkpoint as CommitRecord JSON has it
    until: str | None
    data: dict[str, Any]  # the sink's data place (Place JSON): the task's Parquet file goes here
    batch_id: str | None  # written as a column for the table formats (parquet has it from its folder)
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
        data: Place,
        batch_id: str | None,
    ) -> TaskSpec:
        return cls(
            stream=config.stream,
            shard_id=shard_id,
            closed=closed,
            depth=depth,
            start=start.to_json(),
            until=until.isoformat() if until else None,
            data=data.to_json(),
            batch_id=batch_id,
            endpoint_url=kinesis.meta.endpoint_url,
            region=kinesis.meta.region_name,
            limits=asdict(config.read_limits),
        )


def read_task(specs: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: each input row is a TaskSpec as JSON; each output row is the
    task's result (ReadResult fields and the file written) as JSON."""
    for batch in specs:
        for text in batch.column("spec").to_pylist():
            spec = TaskSpec(**json.loads(text))
            result = _read_one(spec)
            yield pa.RecordBatch.from_pydict({"shard_id": [spec.shard_id], "result": [json.dumps(result)]})


def _read_one(spec: TaskSpec) -> dict[str, Any]:
    import boto3
    import pyarrow.parquet as pq

    start = Checkpoint.from_json(spec.start).start_position()
    if start is None:  # planning never plans a finished shard
        raise InvalidStateError(f"shard {spec.shard_id} is already at SHARD_END")
    client = kinesis_client(boto3.Session(region_name=spec.region), endpoint_url=spec.endpoint_url)
    shard = Shard(spec.shard_id, ending_sequence_number="0" if spec.closed else None)
    end = EndBound(until=datetime.fromisoformat(spec.until) if spec.until else None)
    # Gaps are reported, not raised, here: the driver decides (fail, or --allow-gaps).
    reader = ShardReader(client, spec.stream, shard, start, end, limits=ReadLimits(**spec.limits), allow_gaps=True)
    name = f"part-{spec.shard_id}-{uuid.uuid4().hex[:12]}.parquet"
    batches = _row_batches(reader, spec.depth, spec.batch_id)
    first = next(batches, None)
    if first is None:  # nothing read: no file
        return {**asdict(reader.result()), "file": None}
    with (
        Place.from_json(spec.data).open_part(name) as stream,  # visible only once complete
        pq.ParquetWriter(stream, first.schema, use_dictionary=["shard_id", "partition_key"]) as writer,
    ):
        for rows in itertools.chain([first], batches):
            writer.write_batch(rows)
            _crash_point("reading")  # rows written, task not finished
    return {**asdict(reader.result()), "file": name}


def _row_batches(reader: ShardReader, depth: int, batch_id: str | None) -> Iterator[pa.RecordBatch]:
    """The reader's records as Arrow record batches of at most ROWS_PER_ARROW_BATCH rows."""
    schema = ROW_SCHEMA.append(BATCH_ID) if batch_id else ROW_SCHEMA
    columns: dict[str, list[Any]] = {name: [] for name in ROW_SCHEMA.names}
    for record in reader:
        columns["shard_id"].append(record.shard_id)
        columns["sequence_number"].append(record.sequence_number)
        columns["sub_sequence_number"].append(record.sub_sequence_number)
        columns["partition_key"].append(record.partition_key)
        columns["data"].append(record.data)
        columns["approximate_arrival_timestamp"].append(record.approximate_arrival_timestamp)
        if len(columns["data"]) >= ROWS_PER_ARROW_BATCH:
            yield _batch(columns, depth, batch_id, schema)
            columns = {name: [] for name in ROW_SCHEMA.names}
    if columns["data"]:
        yield _batch(columns, depth, batch_id, schema)


def _crash_point(step: str) -> None:
    """See CatchUpRun.crash_point. pyspark's worker daemon has a process group of its own; the
    run's group is the session the crash tests start the command in (driver and JVM)."""
    if os.environ.get("KINESIS_BATCH_CRASH_AT") == step:
        import signal

        os.killpg(os.getsid(0), signal.SIGKILL)


def _batch(columns: dict[str, list[Any]], depth: int, batch_id: str | None, schema: pa.Schema) -> pa.RecordBatch:
    rows = len(columns["data"])
    columns["lineage_depth"] = [depth] * rows
    if batch_id:
        columns["batch_id"] = [batch_id] * rows
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def read_results(results: Place) -> dict[str, ReadResult]:
    """What each task read (the reader's own ReadResult), by shard."""
    return {shard: ReadResult(**body) for shard, (body, _) in _results(results).items()}


def staged_files(results: Place) -> set[str]:
    """The Parquet files the results name: the only rows of the batch."""
    return {file for _, file in _results(results).values() if file}


def _results(results: Place) -> dict[str, tuple[dict[str, Any], str | None]]:
    found = {}
    for name in results.list():
        if name.endswith(".json") and not name.startswith("."):
            body = json.loads(results.read_text(name) or "{}")
            file = body.pop("file", None)
            found[name.removesuffix(".json")] = (body, file)
    return found


def warm_up(spark: SparkSession) -> None:
    """Start a Python worker on every task slot (fork, imports) with a job that reads nothing, so
    that cost is paid once with the session's start-up, not inside the first wave."""
    slots = spark.sparkContext.defaultParallelism
    frame = spark.createDataFrame(spark.sparkContext.parallelize([("",)] * slots, slots), "spec string")
    frame.mapInArrow(_ready, "ready boolean").collect()


def _ready(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import boto3  # noqa: F401  (what the read tasks import, loaded once per worker)
    import pyarrow.parquet  # noqa: F401

    for _ in batches:
        yield pa.RecordBatch.from_pydict({"ready": [True]})


def run_wave(spark: SparkSession, specs: list[TaskSpec], results: Place) -> None:
    """Read every spec's shard in one Spark job (one task each). Writes each shard's result, from
    the attempt Spark reports successful, to ``results`` and deletes the files of the other
    attempts of these shards."""
    if not specs:
        return
    rows = [(json.dumps(asdict(spec)),) for spec in specs]
    frame = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), "spec string")
    done = frame.mapInArrow(read_task, "shard_id string, result string").collect()
    for row in done:
        results.write_text(f"{row['shard_id']}.json", row["result"])
    kept = {json.loads(row["result"])["file"] for row in done}
    for spec in specs:
        data = Place.from_json(spec.data)
        for name in data.list(f"part-{spec.shard_id}-") + data.list(f".part-{spec.shard_id}-"):
            if name not in kept:
                data.delete(name)


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
