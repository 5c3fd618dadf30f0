"""One Spark task: read a group of shard ranges side by side, each into a Parquet file of its own.

Contract (the driver side is kinesis_batch.spark.job):
- Every range of the group gets a thread with its own ShardReader, paced on its own, so a task
  keeps as many shards at Kinesis' limit as it holds. A range whose parents are in the group
  starts once each of them reached SHARD_END in this task; if one stopped short (the run's
  bound), the child is not read and has no result.
- Each thread writes its rows with pyarrow, a row group of bounded size at a time, into
  ``part-<shard>-<uuid>.parquet`` in the sink's data place (local, or S3 through pyarrow's S3
  file system), visible only once complete. Memory per range: two GetRecords pages and one
  row group, whatever the backlog; their size is a share of the task's budget
  (:func:`buffer_bytes`), so memory does not grow with the group either, down to a floor.
- The task returns one row per range read: the reader's ReadResult and the file's name.
- The first error of any thread stops the others (at their next record) and fails the whole
  task; Spark retries a task as a whole, and a retry rereads every range of the group from its
  start. A library error crosses to the driver as a marker line (:func:`task_error`) that the
  driver turns back into the same typed error; Spark's wrapper never reaches the user.

The driver passes Kinesis endpoint and region in the spec: Python workers do not see
environment changes made in the driver after the JVM started.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kinesis_batch.checkpoints.model import Checkpoint
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import InvalidStateError, ShutdownError
from kinesis_batch.output.place import Place
from kinesis_batch.output.tables import BATCH_ID, ROW_SCHEMA
from kinesis_batch.shards.model import Shard
from kinesis_batch.shards.positions import EndBound
from kinesis_batch.shards.reader import ReadLimits, ShardReader

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient

    from kinesis_batch.planning import ShardRange

MIB = 1024 * 1024
ROWS_PER_ROW_GROUP = 10_000  # at most; fewer when the byte share comes first
TASK_BUFFER_BYTES = 128 * MIB  # record bytes a task holds in pages and row groups, over its shards
MAX_BUFFER_BYTES = 8 * MIB  # a page or row group of one shard: few shards need no bigger ones
# At Kinesis' 5 calls/s and 2 MiB/s, a shard needs 400 KiB a call: smaller pages would slow it.
MIN_BUFFER_BYTES = 512 * 1024
ERROR_MARKER = "kinesis-batch-task-error:"  # a line of a failed task's message: the typed error as JSON
CRASH_AT = "KINESIS_BATCH_CRASH_AT"  # fault injection for the crash and zombie tests
FREEZE_AT = "KINESIS_BATCH_FREEZE_AT"


@dataclass(frozen=True)
class RangeSpec:
    """One shard range of a group, as JSON-able values."""

    shard_id: str
    closed: bool
    depth: int
    start: dict[str, Any]  # a checkpoint as CommitRecord JSON has it
    parents: tuple[str, ...] = ()  # planned parents: read only once these reached SHARD_END


@dataclass(frozen=True)
class GroupSpec:
    """One task's work, as JSON-able values."""

    stream: str
    ranges: tuple[RangeSpec, ...]  # parents before children
    until: str | None
    data: dict[str, Any]  # the sink's data place (Place JSON): the Parquet files go here
    batch_id: str | None  # written as a column for the table formats (parquet has it from its folder)
    endpoint_url: str | None
    region: str | None
    limits: dict[str, Any]

    @classmethod
    def of(
        cls,
        config: RunConfig,
        kinesis: KinesisClient,
        ranges: Sequence[ShardRange],
        until: datetime | None,
        data: Place,
        batch_id: str | None,
    ) -> GroupSpec:
        return cls(
            stream=config.stream,
            ranges=tuple(
                RangeSpec(r.shard_id, r.closed, r.depth, r.start.to_json(), tuple(r.planned_parents)) for r in ranges
            ),
            until=until.isoformat() if until else None,
            data=data.to_json(),
            batch_id=batch_id,
            endpoint_url=kinesis.meta.endpoint_url,
            region=kinesis.meta.region_name,
            limits=asdict(config.read_limits),
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> GroupSpec:
        body = json.loads(text)
        ranges = tuple(RangeSpec(**{**r, "parents": tuple(r["parents"])}) for r in body.pop("ranges"))
        return cls(ranges=ranges, **body)


def read_task(specs: Iterable[str]) -> Iterator[tuple[str, str]]:
    """The function of the job's partitions (a plain RDD job: no row crosses into the JVM, so
    Spark SQL and Arrow are never started): each element is a GroupSpec as JSON; yields one
    (shard id, result as JSON) per range read, the result the reader's ReadResult fields and
    the file written."""
    for text in specs:
        try:
            results = read_group(GroupSpec.from_json(text))
        except Exception as exc:
            raise RuntimeError(task_error(exc)) from exc
        for shard_id, result in results.items():
            yield shard_id, json.dumps(result)


def task_error(exc: Exception) -> str:
    """The marker line the driver finds in Spark's failure text (kinesis_batch.spark.job): the
    error's class name and message, one line of JSON."""
    return ERROR_MARKER + json.dumps({"type": type(exc).__name__, "message": str(exc)})


def read_group(group: GroupSpec) -> dict[str, dict[str, Any]]:
    """Read every range of ``group`` that its parents allow; results by shard, in group order."""
    from kinesis_batch.aws import kinesis_client, new_session

    client = kinesis_client(new_session(region_name=group.region), endpoint_url=group.endpoint_url)
    stop = threading.Event()
    results: dict[str, dict[str, Any]] = {}
    settled: set[str] = set()  # read, or skipped because a parent stopped short
    waiting = list(group.ranges)
    running: dict[Future[dict[str, Any]], str] = {}
    with ThreadPoolExecutor(max_workers=len(group.ranges), thread_name_prefix="shard") as pool:
        try:
            while waiting or running:
                for spec in [s for s in waiting if all(p in settled for p in s.parents)]:
                    waiting.remove(spec)
                    if all(results.get(p, {}).get("reached_shard_end") for p in spec.parents):
                        running[pool.submit(_read_range, client, group, spec, stop)] = spec.shard_id
                    else:
                        settled.add(spec.shard_id)
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    shard_id = running.pop(future)
                    results[shard_id] = future.result()
                    settled.add(shard_id)
        finally:
            stop.set()  # after an error: the other threads end at their next record
    order = [s.shard_id for s in group.ranges]
    return {shard_id: results[shard_id] for shard_id in order if shard_id in results}


def buffer_bytes(ranges: int) -> int:
    """The bytes of records one range's page (and row group) aims at in a task of ``ranges``:
    each range holds two pages and a row group, so the task holds about TASK_BUFFER_BYTES of
    records (in Python, about 2.5 times that) up to 85 ranges, and 1.5 MiB a range beyond."""
    return max(MIN_BUFFER_BYTES, min(MAX_BUFFER_BYTES, TASK_BUFFER_BYTES // (3 * max(ranges, 1))))


def _read_range(client: Any, group: GroupSpec, spec: RangeSpec, stop: threading.Event) -> dict[str, Any]:
    import pyarrow.parquet as pq

    start = Checkpoint.from_json(spec.start).start_position()
    if start is None:  # planning never plans a finished shard
        raise InvalidStateError(f"shard {spec.shard_id} is already at SHARD_END")
    shard = Shard(spec.shard_id, ending_sequence_number="0" if spec.closed else None)
    end = EndBound(until=datetime.fromisoformat(group.until) if group.until else None)
    # Gaps are reported, not raised, here: the driver decides (fail, or --allow-gaps).
    share = buffer_bytes(len(group.ranges))  # every range, also children that wait: an upper bound
    limits = ReadLimits(**group.limits)
    reader = ShardReader(client, group.stream, shard, start, end, limits=limits, allow_gaps=True, page_bytes=share)
    name = f"part-{spec.shard_id}-{uuid.uuid4().hex[:12]}.parquet"
    batches = _row_groups(reader, spec.depth, group.batch_id, stop, share)
    first = next(batches, None)
    if first is None:  # nothing read: no file
        return {**asdict(reader.result()), "file": None}
    with (
        Place.from_json(group.data).open_part(name) as stream,  # visible only once complete
        pq.ParquetWriter(stream, first.schema, use_dictionary=["shard_id", "partition_key"]) as writer,
    ):
        writer.write_batch(first)
        _crash_point("reading")  # rows written, task not finished
        for rows in batches:
            writer.write_batch(rows)
    return {**asdict(reader.result()), "file": name}


def _row_groups(
    reader: ShardReader, depth: int, batch_id: str | None, stop: threading.Event, most_bytes: int
) -> Iterator[pa.RecordBatch]:
    """The reader's records as Arrow record batches of at most ROWS_PER_ROW_GROUP rows or about
    ``most_bytes`` of data."""
    schema = ROW_SCHEMA.append(BATCH_ID) if batch_id else ROW_SCHEMA
    columns: dict[str, list[Any]] = {name: [] for name in ROW_SCHEMA.names}
    size = 0
    for record in reader:
        if stop.is_set():
            raise ShutdownError(f"shard {record.shard_id}: another shard of this task failed")
        columns["shard_id"].append(record.shard_id)
        columns["sequence_number"].append(record.sequence_number)
        columns["sub_sequence_number"].append(record.sub_sequence_number)
        columns["partition_key"].append(record.partition_key)
        columns["data"].append(record.data)
        columns["approximate_arrival_timestamp"].append(record.approximate_arrival_timestamp)
        size += len(record.data)
        if len(columns["data"]) >= ROWS_PER_ROW_GROUP or size >= most_bytes:
            yield _batch(columns, depth, batch_id, schema)
            columns, size = {name: [] for name in ROW_SCHEMA.names}, 0
    if columns["data"]:
        yield _batch(columns, depth, batch_id, schema)


def _batch(columns: dict[str, list[Any]], depth: int, batch_id: str | None, schema: pa.Schema) -> pa.RecordBatch:
    rows = len(columns["data"])
    columns["lineage_depth"] = [depth] * rows
    if batch_id:
        columns["batch_id"] = [batch_id] * rows
    return pa.RecordBatch.from_pydict(columns, schema=schema)


def _crash_point(step: str) -> None:
    """See CatchUpRun.crash_point; here only ``reading`` (rows written, task not finished).

    ``KINESIS_BATCH_CRASH_AT=reading``: kill -9 the run's whole session (driver and JVM; pyspark's
    worker daemon has a process group of its own, the crash tests start the command in a
    session). ``=task``: kill -9 this Python worker only, in the task's first attempt, so Spark
    retries the task. ``KINESIS_BATCH_FREEZE_AT=reading``: SIGSTOP the driver, the JVM and this
    worker once, mid-read, as a long pause of the machine would."""
    crash, freeze = os.environ.get(CRASH_AT), os.environ.get(FREEZE_AT)
    if crash == step:
        os.killpg(os.getsid(0), signal.SIGKILL)
    elif crash == "task" and _first_attempt():
        os.kill(os.getpid(), signal.SIGKILL)
    elif freeze == step and _first_attempt():
        with _FROZEN:
            if not _FROZEN_ONCE:
                _FROZEN_ONCE.append(True)
                os.killpg(os.getsid(0), signal.SIGSTOP)
                os.kill(os.getpid(), signal.SIGSTOP)


_FROZEN = threading.Lock()
_FROZEN_ONCE: list[bool] = []


def _first_attempt() -> bool:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context is not None and context.attemptNumber() == 0
