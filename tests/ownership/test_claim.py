"""State that belongs to one consumer: a lease table is used only by the stream (and the stream's
incarnation) it was made for. The three ways users lose data without this, as tests on the local
stack: a KCL application's table, one table named for two streams, a stream created again. Each
is refused in one line (exit 2) with the other table's items byte-for-byte unchanged; reset is
the way out of a recreation; a table of an earlier kinesis-batch is adopted once."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import cli
from kinesis_batch.ownership.table_mark import MARK_KEY
from kinesis_batch.shards.listing import describe_stream
from tests.runs import assert_exactly_once, read_output
from tests.streams import StreamFactory, put


def run_cli(capsys: pytest.CaptureFixture[str], spark: Any, *args: str) -> tuple[int, str, str]:
    """The command line in this process, on the session's shared Spark."""
    code = cli.main(list(args), spark=lambda: spark)
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys: pytest.CaptureFixture[str], spark: Any, *args: str) -> str:
    """The command ends with exit 2 and one line on stderr, nothing else; returns the line."""
    code, out, err = run_cli(capsys, spark, *args)
    assert code == 2 and out == "", f"exit {code}\n{out}\n{err}"
    (line,) = err.splitlines()
    assert line.startswith("kinesis-batch: error: ") and "Traceback" not in err, err
    return line


def state(dynamodb: Any, *tables: str) -> str:
    """Every item of ``tables`` (and whether each exists), as one comparable text."""
    found: dict[str, Any] = {}
    names = dynamodb.list_tables()["TableNames"]
    for table in tables:
        if table in names:
            items = dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
            found[table] = sorted(json.dumps(item, sort_keys=True) for item in items)
    return json.dumps(found, sort_keys=True)


def kcl_items(kinesis: Any, stream: str, *, owner: str | None) -> list[dict[str, Any]]:
    """A stopped KCL application's leases, as KCL writes them: one shard read partway."""
    shards = [s["ShardId"] for s in kinesis.list_shards(StreamName=stream)["Shards"]]
    iterator = kinesis.get_shard_iterator(StreamName=stream, ShardId=shards[0], ShardIteratorType="TRIM_HORIZON")
    first = kinesis.get_records(ShardIterator=iterator["ShardIterator"])["Records"][0]["SequenceNumber"]
    items = []
    for shard, checkpoint in zip(shards, [first, "TRIM_HORIZON"], strict=True):
        item = {
            "leaseKey": {"S": shard},
            "leaseCounter": {"N": "1843"},
            "checkpoint": {"S": checkpoint},
            "checkpointSubSequenceNumber": {"N": "0"},
            "ownerSwitchesSinceCheckpoint": {"N": "4"},
        }
        items.append(item | ({"leaseOwner": {"S": owner}} if owner else {}))
    return items


def make_table(dynamodb: Any, table: str, items: list[dict[str, Any]]) -> None:
    dynamodb.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "leaseKey", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "leaseKey", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for item in items:
        dynamodb.put_item(TableName=table, Item=item)


@pytest.mark.parametrize("owner", [None, "kcl-worker-7f3a"], ids=["stopped", "with-owners"])
def test_a_kcl_applications_table_is_refused_by_every_command_and_left_as_it_was(
    owner: str | None, kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    put(kinesis, name, 30)
    make_table(dynamodb, "orders-app", kcl_items(kinesis, name, owner=owner))
    before = state(dynamodb, "orders-app", "orders-app-history")

    output = tmp_path / "out"
    for command in (["run", "--output", str(output)], ["plan"], ["status"], ["history"]):
        line = refused(capsys, spark, command[0], "--stream", name, "--table", "orders-app", *command[1:])
        assert "lease table orders-app holds 2 leases but is not kinesis-batch's" in line, line
        assert "it looks like a KCL application's" in line and "import-kcl" in line, line
        assert state(dynamodb, "orders-app", "orders-app-history") == before, f"{command[0]} changed the table"
    assert not output.exists(), "the refused run made its output"


def test_one_table_named_for_two_streams_serves_the_first_and_refuses_the_second(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    orders, clicks = streams.create(shards=2), streams.create(shards=1)
    sent = put(kinesis, orders, 300)
    put(kinesis, clicks, 100, start=1000)
    shared = ("--table", "shared-leases", "--read-limits", "none")
    code, _, err = run_cli(capsys, spark, "run", "--stream", orders, "--output", str(tmp_path / "o"), *shared)
    assert code == 0, err
    before = state(dynamodb, "shared-leases", "shared-leases-history")

    line = refused(capsys, spark, "run", "--stream", clicks, "--output", str(tmp_path / "c"), *shared)

    assert f"lease table shared-leases is stream {orders}'s" in line and f"not {clicks}'s" in line, line
    assert state(dynamodb, "shared-leases", "shared-leases-history") == before
    assert_exactly_once(read_output(tmp_path / "o"), sent)
    assert not (tmp_path / "c").exists()


def test_a_stream_created_again_is_refused_until_reset_then_its_records_are_read_exactly_once(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    created = time.monotonic()
    old = put(kinesis, name, 200)
    run = ("run", "--stream", name, "--output", str(tmp_path / "out"), "--read-limits", "none")
    assert run_cli(capsys, spark, *run)[0] == 0
    first = describe_stream(kinesis, name).created_at
    kinesis.delete_stream(StreamName=name)
    time.sleep(max(0.0, created + 1.1 - time.monotonic()))  # kinesalite stamps a stream to the second
    streams.create(shards=3, name=name)  # a routine re-creation: another shard count
    assert describe_stream(kinesis, name).created_at != first
    new = put(kinesis, name, 150, start=10_000)
    table = f"kinesis-batch-{name}"
    before = state(dynamodb, table, f"{table}-history")

    line = refused(capsys, spark, *run)
    assert f"stream {name} was created again at" in line and first.isoformat() in line, line
    assert f"kinesis-batch reset --stream {name} --table {table} --start trim_horizon --yes" in line, line
    assert state(dynamodb, table, f"{table}-history") == before

    assert "add --yes" in refused(capsys, spark, "reset", "--stream", name, "--start", "trim_horizon")
    code, out, err = run_cli(capsys, spark, "reset", "--stream", name, "--start", "trim_horizon", "--yes")
    assert code == 0, err
    assert "2 old checkpoints recorded in the history" in out and "3 shards" in out, out
    reset_run = out.split(" as run ")[1].split(";")[0]
    code, _, err = run_cli(capsys, spark, *run)
    assert code == 0, err
    assert_exactly_once(read_output(tmp_path / "out"), old + new)  # both incarnations, each record once

    code, out, _ = run_cli(capsys, spark, "history", "--stream", name, "--run", reset_run, "--json")
    entries = json.loads(out)
    assert len(entries) == 2 and all(e["to"] == "TRIM_HORIZON" for e in entries), entries
    assert all(e["from"] == "SHARD_END" or e["from"].isdigit() for e in entries), entries


def test_a_table_of_an_earlier_kinesis_batch_is_adopted_once_and_goes_on_exactly_once(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=2)
    sent = put(kinesis, name, 200)
    run = ("run", "--stream", name, "--output", str(tmp_path / "out"), "--read-limits", "none")
    assert run_cli(capsys, spark, *run)[0] == 0
    history = f"kinesis-batch-{name}-history"
    dynamodb.delete_item(TableName=history, Key=MARK_KEY)  # as the version before this one left it
    sent += put(kinesis, name, 100, start=5000)

    code, _, err = run_cli(capsys, spark, *run)

    assert code == 0, err
    adopted = [line for line in err.splitlines() if line.startswith("adopted lease table")]
    assert len(adopted) == 1, err
    assert_exactly_once(read_output(tmp_path / "out"), sent)
    mark = dynamodb.get_item(TableName=history, Key=MARK_KEY, ConsistentRead=True)["Item"]
    assert mark["markedBy"]["S"] == "adopted" and mark["streamName"]["S"] == name
    _, _, err = run_cli(capsys, spark, *run)
    assert "adopted" not in err, "adopted twice"


def test_an_unmarked_table_whose_checkpoints_are_another_streams_is_refused(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    orders = streams.create(shards=1)
    # kinesalite's sequence numbers hold their stream's creation second and shard index: two
    # streams made in one second share them (AWS's never do), so the second is made a second later.
    time.sleep(1.1)
    clicks = streams.create(shards=1)
    put(kinesis, orders, 50)
    put(kinesis, clicks, 50)
    table = ("--table", "old-shared", "--read-limits", "none")
    assert run_cli(capsys, spark, "run", "--stream", orders, "--output", str(tmp_path / "o"), *table)[0] == 0
    dynamodb.delete_item(TableName="old-shared-history", Key=MARK_KEY)  # made by an earlier kinesis-batch
    before = state(dynamodb, "old-shared", "old-shared-history")

    line = refused(capsys, spark, "run", "--stream", clicks, "--output", str(tmp_path / "c"), *table)

    assert f"did not come from stream {clicks}" in line, line
    assert state(dynamodb, "old-shared", "old-shared-history") == before


def test_a_table_of_a_newer_format_is_refused(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=1)
    put(kinesis, name, 20)
    run = ("run", "--stream", name, "--output", str(tmp_path / "out"), "--read-limits", "none")
    assert run_cli(capsys, spark, *run)[0] == 0
    table = f"kinesis-batch-{name}"
    mark = dynamodb.get_item(TableName=f"{table}-history", Key=MARK_KEY, ConsistentRead=True)["Item"]
    dynamodb.put_item(TableName=f"{table}-history", Item={**mark, "formatVersion": {"N": "2"}})
    before = state(dynamodb, table, f"{table}-history")

    line = refused(capsys, spark, *run)

    assert "table format 2, newer than this install's 1" in line, line
    assert state(dynamodb, table, f"{table}-history") == before
