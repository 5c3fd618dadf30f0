"""The hand-over between a stopped KCL application and kinesis-batch, on the local stack: an
import from a KCL-shaped table followed by a run outputs exactly the records after KCL's
checkpoints (a checkpoint inside a KPL aggregate, a parent at SHARD_END, a child at
TRIM_HORIZON); an export then leaves the KCL table where a KCL worker resumes; a running KCL
application, or a checkpoint in flight, is refused with nothing written."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import LeaseStore
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import InvalidStateError, StreamRecreatedError
from kinesis_batch.kcl.handover import export_kcl, import_kcl
from kinesis_batch.run import CatchUpRun
from kinesis_batch.shards.listing import describe_stream, list_shards
from kinesis_batch.shards.model import Shard
from tests.ownership.test_claim import make_table, refused, run_cli, state
from tests.runs import assert_exactly_once, read_output
from tests.shards.test_deaggregation import aggregate
from tests.streams import StreamFactory, split

KCL_TABLE = "orders-app"
WATCH = 0.6  # seconds no counter may move: the tests' KCL "workers" renew every 0.1 s


@dataclass
class KclStream:
    """A stream as a KCL application left it, and what a run after the hand-over must output."""

    name: str
    parent: Shard  # split: SHARD_END in the KCL table
    children: list[Shard]  # the first at TRIM_HORIZON in the KCL table, the second not there yet
    aggregated: Shard  # read by KCL up to the third user record of its second KPL aggregate
    checkpoint: tuple[str, int]  # that shard's KCL checkpoint
    after: list[str]  # the data of every record after KCL's checkpoints


def put_to(kinesis: Any, name: str, shard: Shard, data: list[str]) -> None:
    for text in data:
        kinesis.put_record(
            StreamName=name, Data=text.encode(), PartitionKey=text, ExplicitHashKey=str(shard.starting_hash_key)
        )


@pytest.fixture
def kcl_stream(kinesis: Any, streams: StreamFactory) -> KclStream:
    name = streams.create(shards=2)
    parent, aggregated = sorted(list_shards(kinesis, name), key=lambda shard: shard.starting_hash_key)
    put_to(kinesis, name, parent, [f"parent-{i}" for i in range(10)])  # all processed by KCL
    sequences = []
    for n in range(3):  # three KPL aggregates of five user records each
        key, _, data = aggregate(*((f"agg-{n}-{i}", f"agg-{n}-{i}".encode()) for i in range(5)))
        response = kinesis.put_record(
            StreamName=name, Data=data, PartitionKey=key, ExplicitHashKey=str(aggregated.starting_hash_key)
        )
        sequences.append(response["SequenceNumber"])
    put_to(kinesis, name, aggregated, [f"plain-{i}" for i in range(5)])
    split(kinesis, name, parent)
    children = sorted((s for s in list_shards(kinesis, name) if s.parent_shard_id == parent.shard_id),
                      key=lambda shard: shard.starting_hash_key)  # fmt: skip
    for child in children:
        put_to(kinesis, name, child, [f"{child.shard_id}-{i}" for i in range(5)])
    after = ["agg-1-3", "agg-1-4", *(f"agg-2-{i}" for i in range(5)), *(f"plain-{i}" for i in range(5))]
    after += [f"{child.shard_id}-{i}" for child in children for i in range(5)]
    return KclStream(name, parent, children, aggregated, (sequences[1], 2), after)


def kcl_lease(key: str, checkpoint: str, *, sub: int = 0, counter: int = 7, **more: Any) -> dict[str, Any]:
    return {
        "leaseKey": {"S": key},
        "leaseCounter": {"N": str(counter)},
        "checkpoint": {"S": checkpoint},
        "checkpointSubSequenceNumber": {"N": str(sub)},
        "ownerSwitchesSinceCheckpoint": {"N": "1"},
        **more,
    }


def kcl_leases(stream: KclStream, key: Any = lambda shard: shard) -> list[dict[str, Any]]:
    """The stopped KCL application's leases (``key`` makes a multi-stream key of a shard id)."""
    sequence, sub = stream.checkpoint
    return [
        kcl_lease(key(stream.parent.shard_id), "SHARD_END", counter=12),
        kcl_lease(key(stream.children[0].shard_id), "TRIM_HORIZON", counter=3,
                  parentShardId={"SS": [stream.parent.shard_id]}),
        kcl_lease(key(stream.aggregated.shard_id), sequence, sub=sub, leaseOwner={"S": "kcl-worker-7f3a"}),
    ]  # fmt: skip


def catch_up(kinesis: Any, dynamodb: Any, spark: Any, name: str, table: str, output: Path) -> None:
    config = RunConfig.of(stream=name, output=str(output), table=table, worker_id="batch")
    report = CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark).run()
    assert report.published


@contextmanager
def kcl_worker_renewing(dynamodb: Any, key: str) -> Iterator[None]:
    """A live KCL worker: it bumps the lease's counter every 0.1 s, as KCL's renewer does."""
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(0.1):
            dynamodb.update_item(TableName=KCL_TABLE, Key={"leaseKey": {"S": key}},
                                 UpdateExpression="SET leaseCounter = leaseCounter + :one",
                                 ExpressionAttributeValues={":one": {"N": "1"}})  # fmt: skip

    thread = threading.Thread(target=renew, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def test_an_import_then_a_run_outputs_exactly_the_records_after_kcls_checkpoints_and_an_export_hands_them_back(
    kcl_stream: KclStream, kinesis: Any, dynamodb: Any, spark: Any, tmp_path: Path
) -> None:
    make_table(dynamodb, KCL_TABLE, kcl_leases(kcl_stream))
    store = LeaseStore(dynamodb, "kb-orders")

    imported = import_kcl(kinesis, store, KCL_TABLE, kcl_stream.name, who="test", watch_seconds=WATCH)

    sequence, sub = kcl_stream.checkpoint
    assert imported.checkpoints == {
        kcl_stream.parent.shard_id: "SHARD_END",
        kcl_stream.children[0].shard_id: "TRIM_HORIZON",
        kcl_stream.aggregated.shard_id: f"{sequence}.{sub}",
    }
    catch_up(kinesis, dynamodb, spark, kcl_stream.name, "kb-orders", tmp_path / "out")
    assert_exactly_once(read_output(tmp_path / "out"), kcl_stream.after)

    exported = export_kcl(kinesis, store, KCL_TABLE, kcl_stream.name, who="test", watch_seconds=WATCH)

    ours = {lease.lease_key: lease.checkpoint for lease in store.list_leases()}
    kcl = {item["leaseKey"]["S"]: item for item in dynamodb.scan(TableName=KCL_TABLE)["Items"]}
    assert set(kcl) == set(ours) == set(exported.checkpoints)  # the second child, new to KCL, is there too
    for shard, checkpoint in ours.items():
        item = kcl[shard]
        assert (item["checkpoint"]["S"], int(item["checkpointSubSequenceNumber"]["N"])) == (
            checkpoint.value, checkpoint.sub_sequence_number,
        ), shard  # fmt: skip
        assert "leaseOwner" not in item and "pendingCheckpoint" not in item, item
    assert int(kcl[kcl_stream.aggregated.shard_id]["leaseCounter"]["N"]) == 8  # fenced, bumped once
    history = {entry.run_id for entry in _history(dynamodb, "kb-orders")}
    assert {imported.run_id, exported.run_id} <= history


def _history(dynamodb: Any, table: str) -> list[Any]:
    from kinesis_batch.checkpoints.history import HistoryTable

    history = HistoryTable(dynamodb, table)
    return [
        entry for lease in LeaseStore(dynamodb, table).list_leases() for entry in history.for_shard(lease.lease_key)
    ]


def test_a_multi_stream_applications_checkpoints_are_imported_for_this_streams_incarnation_only(
    kcl_stream: KclStream, kinesis: Any, dynamodb: Any
) -> None:
    stream = describe_stream(kinesis, kcl_stream.name)
    epoch = int(stream.created_at.timestamp())
    make_table(
        dynamodb, KCL_TABLE, kcl_leases(kcl_stream, lambda shard: f"{stream.account}:{stream.name}:{epoch}:{shard}")
    )
    other = kcl_lease(f"{stream.account}:other-stream:{epoch}:shardId-000000000000", "TRIM_HORIZON")
    leftover = kcl_lease(f"{stream.account}:{stream.name}:{epoch - 3600}:{kcl_stream.parent.shard_id}", "4968")
    for item in (other, leftover):  # another stream's lease; one of this stream's earlier incarnation
        dynamodb.put_item(TableName=KCL_TABLE, Item=item)

    imported = import_kcl(
        kinesis, LeaseStore(dynamodb, "kb-multi"), KCL_TABLE, stream.name, who="t", watch_seconds=WATCH
    )
    assert set(imported.checkpoints) == {kcl_stream.parent.shard_id, kcl_stream.children[0].shard_id,
                                         kcl_stream.aggregated.shard_id}  # fmt: skip
    assert imported.checkpoints[kcl_stream.parent.shard_id] == "SHARD_END"  # not the leftover's 4968

    older = kcl_leases(kcl_stream, lambda shard: f"{stream.account}:{stream.name}:{epoch - 3600}:{shard}")
    make_table(dynamodb, "old-app", older)
    with pytest.raises(StreamRecreatedError, match=f"created at epoch {epoch - 3600}, not of the one created at"):
        import_kcl(kinesis, LeaseStore(dynamodb, "kb-old"), "old-app", stream.name, who="t", watch_seconds=WATCH)


def test_a_running_kcl_application_or_a_checkpoint_in_flight_is_refused_and_nothing_is_written(
    kcl_stream: KclStream, kinesis: Any, dynamodb: Any, spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    make_table(dynamodb, KCL_TABLE, kcl_leases(kcl_stream))
    store = LeaseStore(dynamodb, "kb-orders")
    with kcl_worker_renewing(dynamodb, kcl_stream.aggregated.shard_id):
        command = ("--stream", kcl_stream.name, "--kcl-table", KCL_TABLE, "--table", "kb-orders")
        line = refused(capsys, spark, "import-kcl", *command, "--watch-seconds", str(WATCH))
    assert f"the KCL application of {KCL_TABLE} is running" in line, line
    assert not store.table_exists()

    in_flight = kcl_lease(kcl_stream.children[0].shard_id, "TRIM_HORIZON", pendingCheckpoint={"S": "4968"})
    dynamodb.put_item(TableName=KCL_TABLE, Item=in_flight)
    with pytest.raises(InvalidStateError, match="have a pendingCheckpoint"):
        import_kcl(kinesis, store, KCL_TABLE, kcl_stream.name, who="t", watch_seconds=WATCH)
    assert not store.table_exists()


def test_an_export_is_refused_while_the_kcl_application_runs_and_leaves_its_table_as_it_was(
    kcl_stream: KclStream, kinesis: Any, dynamodb: Any, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_table(dynamodb, KCL_TABLE, kcl_leases(kcl_stream))
    command = ("--stream", kcl_stream.name, "--kcl-table", KCL_TABLE, "--table", "kb-orders", "--watch-seconds", "0.6")
    code, out, err = run_cli(capsys, spark, "import-kcl", *command)
    assert code == 0 and out.startswith("import-kcl-") and "3 checkpoints from orders-app into kb-orders" in out, err
    catch_up(kinesis, dynamodb, spark, kcl_stream.name, "kb-orders", tmp_path / "out")
    with kcl_worker_renewing(dynamodb, kcl_stream.parent.shard_id):
        line = refused(capsys, spark, "export-kcl", *command)
        before = state(dynamodb, KCL_TABLE)  # the worker still renews: compare the checkpoints only
    assert f"the KCL application of {KCL_TABLE} is running" in line, line
    after = {item["leaseKey"]["S"]: item["checkpoint"]["S"] for item in dynamodb.scan(TableName=KCL_TABLE)["Items"]}
    assert after == {key: checkpoint for key, checkpoint in _checkpoints(before).items()}


def _checkpoints(state_text: str) -> dict[str, str]:
    import json

    (items,) = json.loads(state_text).values()
    return {item["leaseKey"]["S"]: item["checkpoint"]["S"] for item in map(json.loads, items)}
