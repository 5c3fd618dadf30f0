"""One task reads a group of shards side by side (threads, no Spark needed to prove it): a child
once its parents in the group reached SHARD_END, never one whose parent stopped short, and the
first error of any shard fails the whole group."""

from __future__ import annotations

import contextlib
import json
import os
import time
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from devkit.stack import LocalStack

from kinesis_batch import Checkpoint, aws
from kinesis_batch.config import RunConfig
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.errors import IllegalArgumentError, StreamNotFoundError
from kinesis_batch.planning import ShardRange, plan_run
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards
from kinesis_batch.spark.rows import MIB, TASK_BUFFER_BYTES, buffer_bytes
from kinesis_batch.spark.spec import GroupSpec, raised_in_task
from kinesis_batch.spark.targets import RouteTargets
from kinesis_batch.spark.task import read_group, read_spec
from kinesis_batch.storage.layout import FileLayout
from kinesis_batch.storage.place import Place
from tests.runs import assert_exactly_once, diamond_stream
from tests.streams import StreamFactory, put


def plan_of(kinesis: Any, name: str, until: datetime | None = None) -> tuple[ShardRange, ...]:
    lineage = Lineage.build(list_shards(kinesis, name))
    plan = plan_run(name, lineage, {}, worker_id="w", now_ms=0, initial=Checkpoint.trim_horizon(), until=until)
    return plan.ranges


def group(
    kinesis: Any, name: str, ranges: tuple[ShardRange, ...], out: Path, until: datetime | None = None
) -> GroupSpec:
    config = RunConfig.of(stream=name, output=str(out), read_limits="none")
    return GroupSpec.of(
        config, kinesis, ranges, until, RouteTargets.single(Place(str(out)), FileLayout()), batch_id="b1"
    )


def test_one_group_reads_a_whole_history_parents_first_into_one_file_for_all_its_shards(
    kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 30)
    ranges = plan_of(kinesis, name)
    assert max(r.wave for r in ranges) == 2  # three generations, one task

    results = read_group(group(kinesis, name, ranges, tmp_path))

    assert list(results) == [r.shard_id for r in ranges]  # every shard, in plan order
    closed = {r.shard_id for r in ranges if r.closed}
    assert {shard for shard, result in results.items() if result.read.reached_shard_end} == closed
    files = [file.name for result in results.values() for file in result.files]
    assert len(files) == 1 and files == [p.name for p in tmp_path.glob("part-*.parquet")]  # unpartitioned, small
    assert files[0].startswith(f"part-{ranges[0].shard_id}-"), "named for the task's first shard"
    assert_exactly_once(ds.dataset(tmp_path, format="parquet").to_table().to_pydict(), sent)


def test_a_child_whose_parent_stopped_at_the_bound_is_not_read(
    kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=3)
    sent = put(kinesis, name, 20)
    time.sleep(1.1)  # arrival times are whole seconds on the emulator
    bound = datetime.now(UTC)
    time.sleep(1.1)
    diamond_stream(kinesis, name, 20)  # the splits and merges come after the bound

    results = read_group(group(kinesis, name, plan_of(kinesis, name, bound), tmp_path, bound))

    roots = {r.shard_id for r in plan_of(kinesis, name) if not r.planned_parents}
    assert set(results) == roots, "a child was read though its parents stopped at the bound"
    assert not any(result.read.reached_shard_end for result in results.values())
    assert_exactly_once(ds.dataset(tmp_path, format="parquet").to_table().to_pydict(), sent)


def test_the_first_error_of_one_shard_fails_the_whole_group(
    kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    put(kinesis, name, 50)
    ranges = plan_of(kinesis, name)
    missing = ShardRange("shardId-000000000099", Checkpoint.trim_horizon(), 0, 0, False)

    with pytest.raises(StreamNotFoundError, match="shardId-000000000099"):
        read_group(group(kinesis, name, (*ranges, missing), tmp_path))


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys too."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_executors_without_credentials_say_they_are_the_executors_and_the_spec_holds_none(
    kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on a Spark Connect server without an instance profile: the driver had credentials, the
    task (its process's environment) has none."""
    name = streams.create(shards=1)
    put(kinesis, name, 5)
    spec = group(kinesis, name, plan_of(kinesis, name), tmp_path).to_json()
    credentials = kinesis._request_signer._credentials.get_frozen_credentials()
    for secret in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(secret, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance profile to ask

    with pytest.raises(RuntimeError) as failed:
        list(read_spec(spec))
    said = raised_in_task(failed.value)

    assert isinstance(said, IllegalArgumentError)
    assert str(said).startswith(
        "the Spark executors have no AWS credentials or region of their own (Unable to locate credentials): they "
        "read Kinesis with theirs (a Spark Connect server's or a cluster's instance profile"
    ), str(said)
    assert "AWS_DEFAULT_REGION" not in str(said), "not the user's own environment"
    assert os.environ["AWS_ENDPOINT_URL_KINESIS"] in spec, "the endpoint travels in the spec"
    assert not {credentials.access_key, credentials.secret_key} & set(_strings(json.loads(spec))), "credentials never"
    assert list(tmp_path.glob("part-*.parquet")) == []


@pytest.mark.parametrize(
    ("ranges", "share"),
    [
        (1, 8 * MIB),  # a few shards: full 8 MiB pages and row groups
        (5, 8 * MIB),
        (6, TASK_BUFFER_BYTES // 18),  # from here the task's budget is shared
        (19, TASK_BUFFER_BYTES // 57),
        (85, TASK_BUFFER_BYTES // 255),
        (86, 512 * 1024),  # the floor: what a shard needs a call at Kinesis' limit, and some
        (500, 512 * 1024),
    ],
)
def test_a_ranges_pages_and_row_groups_share_the_tasks_budget_between_a_ceiling_and_a_floor(
    ranges: int, share: int
) -> None:
    assert buffer_bytes(ranges) == share


LARGEST = 10 * MIB  # the largest record Kinesis takes


@contextlib.contextmanager
def peak_memory() -> Iterator[Callable[[], int]]:
    """The peak of what Python and Arrow held at once while inside (tracemalloc's peak plus the
    peak of an Arrow pool of its own, made the default meanwhile): an upper bound of the task's
    record memory, the interpreter's own start not counted."""
    pool = pa.proxy_memory_pool(pa.default_memory_pool())
    before = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    tracemalloc.start()
    try:
        yield lambda: tracemalloc.get_traced_memory()[1] + pool.max_memory()
    finally:
        tracemalloc.stop()
        pa.set_memory_pool(before)


@pytest.mark.parametrize("decode", [None, "json"], ids=["raw", "typed"])
def test_records_of_10_mib_land_raw_and_typed_within_the_tasks_memory_budget(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, decode: str | None
) -> None:
    # moto's Kinesis is the local endpoint that serves one: kinesalite refuses a record over 1 MiB,
    # and kinesis-local takes one after UpdateMaxRecordSize, as AWS does, but answers a 500 to its read
    monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS", stack.dynamodb.url)
    kinesis = aws.kinesis_client()
    streams = StreamFactory(kinesis, prefix="largest")
    name = streams.create(shards=1)
    head = b'{"id": %d, "blob": "'
    sent = [head % n + b"x" * (LARGEST - len(head % n) - 2) + b'"}' for n in range(3)]
    assert {len(data) for data in sent} == {LARGEST}
    for n, data in enumerate(sent):
        kinesis.put_record(StreamName=name, Data=data, PartitionKey=f"k{n}")
    config = RunConfig.of(stream=name, output=str(tmp_path), read_limits="none")
    table = pa.schema([("id", pa.int64()), ("blob", pa.string())])
    spec = DecodeSpec(DecodeSettings(decode=decode), table=table) if decode else None
    for folder in ("rows", "dead"):  # the driver's, before the tasks start
        (tmp_path / folder).mkdir()
    targets = RouteTargets.single(Place(str(tmp_path / "rows")), FileLayout())
    dead = Place(str(tmp_path / "dead"))
    group = GroupSpec.of(config, kinesis, plan_of(kinesis, name), None, targets, "b1", dead_data=dead, decode=spec)

    with peak_memory() as peak:
        read_group(group)

    landed = ds.dataset(tmp_path / "rows", format="parquet").to_table()
    assert not list(tmp_path.glob("dead/*.parquet")), "no dead letter"
    if decode:
        assert landed.column("id").to_pylist() == [0, 1, 2]
        blobs = landed.column("blob").to_pylist()
        assert [head % n + blob.encode() + b'"}' for n, blob in enumerate(blobs)] == sent
    else:
        assert landed.column("data").to_pylist() == sent
    print(f"{decode or 'raw'}: three records of 10 MiB, peak {peak() / MIB:.0f} MiB")
    assert peak() <= TASK_BUFFER_BYTES, f"peak {peak() / MIB:.0f} MiB over the task's {TASK_BUFFER_BYTES // MIB} MiB"
