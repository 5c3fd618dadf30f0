"""One Spark task: read a group of shard ranges side by side, each into Parquet files of its own.

Contract (the driver side is kinesis_batch.spark.job, the wire format kinesis_batch.spark.spec):
- Every range of the group gets a thread with its own ShardReader, paced on its own, so a task
  keeps as many shards at Kinesis' limit as it holds. A range whose parents are in the group
  starts once each of them reached SHARD_END in this task; if one stopped short (the run's
  bound), the child is not read and has no result.
- The threads write their rows (kinesis_batch.spark.rows; decoded by
  kinesis_batch.decoding.pipeline) into the task's files (kinesis_batch.spark.files) in the
  sink's data place (local, or S3 through pyarrow's S3 file system): one file per partition
  value for all of the task's ranges, rolled at the target size, each visible only once
  complete; dead letters into files of their own in the dead-letter output's data place.
- The task returns one row per range read: its RangeResult (kinesis_batch.storage.staged). The
  task's files are all named in the first range's result (a task's results are kept or
  dropped together: kinesis_batch.spark.job).
- The first error of any thread stops the others (at their next page) and fails the whole
  task; Spark retries a task as a whole, and a retry rereads every range of the group from its
  start. A library error crosses to the driver as a marker line (spec.task_error).
- Observers of the run (kinesis_batch.events) that the driver shipped are told
  ``reading`` once a range's first rows are written.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from datetime import datetime
from typing import Any

from botocore.exceptions import NoCredentialsError, NoRegionError

from kinesis_batch.decoding.pipeline import Pipeline
from kinesis_batch.decoding.registry import Registry
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError
from kinesis_batch.events import Event, Observer, emit
from kinesis_batch.routing.routes import SINGLE
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.model import Shard
from kinesis_batch.shards.positions import EndBound
from kinesis_batch.shards.reader import ShardReader
from kinesis_batch.spark.files import RouteFiles, TaskFiles
from kinesis_batch.spark.rows import buffer_bytes, pages, row_groups
from kinesis_batch.spark.spec import GroupSpec, RangeSpec, task_error
from kinesis_batch.spark.targets import RouteTargets
from kinesis_batch.storage.layout import FileLayout
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.staged import RangeResult


def read_spec(spec: str, observers: Sequence[Observer] = ()) -> Iterator[tuple[str, str]]:
    """A read task (kinesis_batch.spark.job, in the engine's job form): ``spec`` is a GroupSpec
    as JSON; yields one (shard id, result as JSON) per range read, the result the reader's
    ReadResult fields and the files written. An error is raised as the task error the driver
    turns back into the library's own (kinesis_batch.spark.spec.raised_in_task)."""
    try:
        results = read_group(GroupSpec.from_json(spec), observers)
    except Exception as exc:
        raise RuntimeError(task_error(_as_the_executors(exc))) from exc
    for shard_id, result in results.items():
        yield shard_id, result.to_json()


def _as_the_executors(exc: Exception) -> Exception:
    """A task that finds no AWS credentials or region says whose they are: the executors', which
    read with their own (a Spark Connect server's or a cluster's nodes': an instance profile, a
    role, their environment). The driver found its own before any task ran, and credentials never
    travel in the read's spec, so pointing the user at their own environment would mislead."""
    if not isinstance(exc.__cause__, (NoCredentialsError, NoRegionError)):
        return exc
    return IllegalArgumentError(
        f"the Spark executors have no AWS credentials or region of their own ({exc.__cause__}): they read Kinesis "
        "with theirs (a Spark Connect server's or a cluster's instance profile, role or environment; endpoints "
        "travel in the read's spec, credentials never do)"
    )


def read_group(group: GroupSpec, observers: Sequence[Observer] = ()) -> dict[str, RangeResult]:
    """Read every range of ``group`` that its parents allow; results by shard, in group order."""
    from kinesis_batch.aws import as_role, kinesis_client, new_session

    client = kinesis_client(new_session(region_name=group.region), endpoint_url=group.endpoint_url)
    if group.role_arn:  # a stream of another account: read with its role, assumed with the task's credentials
        client = as_role(client, group.role_arn, group.external_id, sts_endpoint_url=group.sts_endpoint_url)
    stop = threading.Event()
    results: dict[str, RangeResult] = {}
    settled: set[str] = set()  # read, or skipped because a parent stopped short
    waiting = list(group.ranges)
    running: dict[Future[RangeResult], str] = {}
    prefix = group.ranges[0].shard_id
    targets = RouteTargets.from_json(group.targets)
    dead_layout = FileLayout.from_json(group.dead_files or {})
    rows = RouteFiles(targets, prefix, dead_layout, schemas=bool(group.decode))
    dead = TaskFiles(Place.from_json(group.dead_data), prefix, dead_layout) if group.dead_data else None
    threads = ThreadPoolExecutor(max_workers=len(group.ranges), thread_name_prefix="shard")
    with rows, dead or contextlib.nullcontext(), threads as pool:
        try:
            while waiting or running:
                for spec in [s for s in waiting if all(p in settled for p in s.parents)]:
                    waiting.remove(spec)
                    if all(p in results and results[p].read.reached_shard_end for p in spec.parents):
                        reading = pool.submit(_read_range, client, group, spec, stop, observers, (rows, dead))
                        running[reading] = spec.shard_id
                    else:
                        settled.add(spec.shard_id)
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    shard_id = running.pop(future)
                    results[shard_id] = future.result()
                    settled.add(shard_id)
        finally:
            stop.set()  # after an error: the other threads end at their next record
    order = [s.shard_id for s in group.ranges if s.shard_id in results]
    if order:  # the files, finished as the block above ended, go with the first range read
        first, letters = results[order[0]], tuple(dead.files) if dead else ()
        results[order[0]] = replace(
            first, files=tuple(rows.files), dead_letter_files=letters, held_files=tuple(rows.held_files)
        )
    return {shard_id: results[shard_id] for shard_id in order}


def _read_range(
    client: Any,
    group: GroupSpec,
    spec: RangeSpec,
    stop: threading.Event,
    observers: Sequence[Observer],
    into: tuple[RouteFiles, TaskFiles | None],
) -> RangeResult:
    """Read one range into the task's files of each route's rows and of dead letters; its
    result names no file (the task's are named once they are finished)."""
    files, dead = into
    start = Checkpoint.from_json(spec.start).start_position()
    if start is None:  # planning never plans a finished shard
        raise InvalidStateError(f"shard {spec.shard_id} is already at SHARD_END")
    shard = Shard(spec.shard_id, ending_sequence_number="0" if spec.closed else None)
    end = EndBound(until=datetime.fromisoformat(group.until) if group.until else None)
    # Gaps are reported, not raised, here: the driver decides (fail, or --allow-gaps).
    share = buffer_bytes(len(group.ranges))  # every range, also children that wait: an upper bound
    limits = ReadLimits(**group.limits)
    reader = ShardReader(
        client, group.stream, shard, start, end, limits=limits, allow_gaps=True, page_bytes=share, reader=group.reader
    )
    batch_id = group.batch_id if group.batch_column else None
    reading = _Once(lambda: emit(Event("reading", group.batch_id, spec.shard_id), observers))
    if group.decode is None:
        for rows in row_groups(reader.chunks(), spec.depth, batch_id, stop, share):
            files.write(SINGLE, rows)
            reading()
        return RangeResult(reader.result())
    if dead is None:
        raise InvalidStateError("a decoding read's spec names no dead-letter place")
    decode = DecodeSpec.from_json(group.decode)
    pipeline = Pipeline(
        decode, shard_id=spec.shard_id, depth=spec.depth, batch_id=batch_id, registry=_registry(group.decode)
    )
    for page in pages(reader.chunks(), stop, share):
        done = pipeline.page(page)
        for route, batch in done.routes.items():
            files.write(route, batch)
        if done.held is not None:
            files.hold(done.held)
        if done.dead is not None:
            dead.write(done.dead)
        reading()
    return RangeResult(reader.result(), counts=pipeline.counts.to_json())


def _registry(decode: dict[str, Any]) -> Registry | None:
    """The Glue Schema Registry the spec's records name their schemas in (None: not framed)."""
    glue = decode.get("glue")
    if not glue:
        return None
    from kinesis_batch.aws import glue_client, new_session

    endpoint = glue.get("endpoint_url")
    return Registry(
        lambda: glue_client(new_session(region_name=glue.get("region")), endpoint_url=endpoint), endpoint or ""
    )


class _Once:
    def __init__(self, action: Callable[[], None]) -> None:
        self.action, self.done = action, False

    def __call__(self) -> None:
        if not self.done:
            self.done = True
            self.action()


__all__ = ["read_group", "read_spec"]
