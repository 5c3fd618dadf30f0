"""The README's first command: the core library end to end on the embedded local stack.

Starts moto_server (DynamoDB) and kinesalite on loopback, creates a stream with a split and a
merge in its history, takes leases, reads every shard in lineage waves (parents to SHARD_END
before children), moves checkpoints in two phases, checks that every record was read exactly
once, prints the status table, and stops the servers.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections import Counter

from kinesis_batch import (
    Checkpoint,
    DynamoDBCheckpointStore,
    Lease,
    LeaseManager,
    LeaseRenewer,
    LeaseStore,
    Lineage,
    ReadLimits,
    ShardReader,
    list_shards,
)
from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.devstack import local_stack

STREAM = "demo-clicks"
TABLE = "demo-consumer"


def main() -> int:
    started = time.monotonic()
    with local_stack(("kinesalite",)) as stack:
        os.environ.update(stack.env("kinesalite"))
        print(f"local endpoints: DynamoDB {stack.dynamodb.url}, Kinesis {stack.kinesis['kinesalite'].url}")
        kinesis, dynamodb = kinesis_client(), dynamodb_client()
        sent = _seed_stream(kinesis)
        print(f"stream {STREAM}: {len(sent)} records, history with a split and a merge")

        store = LeaseStore(dynamodb, TABLE)
        checkpoints = DynamoDBCheckpointStore(store)
        checkpoints.create_checkpoint_store_if_not_exists()
        manager = LeaseManager(store, worker_id=f"demo-{uuid.uuid4().hex[:6]}", lease_duration=30)
        read = _catch_up(kinesis, manager, checkpoints, run_id="run-1")
        again = _catch_up(kinesis, manager, checkpoints, run_id="run-2")

        duplicates = sum(n - 1 for n in Counter(read).values() if n > 1)
        missing = len(set(sent) - set(read))
        _print_status(store, Lineage.build(list_shards(kinesis, STREAM)))
        print(f"\nread {len(read)} records: {duplicates} duplicates, {missing} missing; second run read {len(again)}")
        print(f"done in {time.monotonic() - started:.1f} s; servers stopped")
        return 0 if duplicates == missing == len(again) == 0 else 1


def _seed_stream(kinesis) -> list[str]:  # type: ignore[no-untyped-def]
    kinesis.create_stream(StreamName=STREAM, ShardCount=3)
    _wait_active(kinesis)
    sent = _put(kinesis, 0, 3000)
    first, second, third = sorted(list_shards(kinesis, STREAM), key=lambda s: s.starting_hash_key)
    middle = (first.starting_hash_key + first.ending_hash_key + 1) // 2
    kinesis.split_shard(StreamName=STREAM, ShardToSplit=first.shard_id, NewStartingHashKey=str(middle))
    _wait_active(kinesis)
    kinesis.merge_shards(StreamName=STREAM, ShardToMerge=second.shard_id, AdjacentShardToMerge=third.shard_id)
    _wait_active(kinesis)
    return sent + _put(kinesis, 3000, 3000)


def _put(kinesis, start: int, count: int) -> list[str]:  # type: ignore[no-untyped-def]
    for first in range(start, start + count, 500):
        batch = [{"Data": f"event-{i}".encode(), "PartitionKey": f"user-{i % 97}"} for i in range(first, first + 500)]
        kinesis.put_records(StreamName=STREAM, Records=batch)
    return [f"event-{i}" for i in range(start, start + count)]


def _wait_active(kinesis) -> None:  # type: ignore[no-untyped-def]
    while kinesis.describe_stream_summary(StreamName=STREAM)["StreamDescriptionSummary"]["StreamStatus"] != "ACTIVE":
        time.sleep(0.05)


def _catch_up(kinesis, manager: LeaseManager, checkpoints: DynamoDBCheckpointStore, run_id: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Read every readable shard, wave by wave, moving checkpoints in two phases."""
    shards = list_shards(kinesis, STREAM)
    lineage = Lineage.build(shards)
    manager.ensure_leases(
        Lease(s.shard_id, parent_shard_ids=frozenset(s.parent_ids), lineage_depth=lineage.depth(s.shard_id))
        for s in shards
    )
    manager.take([s.shard_id for s in shards])
    read: list[str] = []
    with LeaseRenewer(manager):
        while True:
            finished = {key for key, lease in manager.held().items() if lease.checkpoint.is_shard_end}
            progressed = False
            # Readable shards have every parent at SHARD_END; reaching an end opens its children.
            for shard_id in lineage.readable(finished):
                lease = manager.lease(shard_id)
                start = lease.checkpoint.start_position()
                if start is None:
                    continue
                reader = ShardReader(kinesis, STREAM, lineage.shards[shard_id], start, limits=ReadLimits.unlimited())
                read.extend(record.data.decode() for record in reader)
                result = reader.result()
                if result.reached_shard_end:
                    target = Checkpoint.shard_end()
                elif result.last_sequence_number is not None:
                    target = Checkpoint.at(result.last_sequence_number, result.last_sub_sequence_number or 0)
                else:
                    continue
                batch_id = f"{run_id}-{shard_id}"
                with manager.fenced(shard_id) as settle:
                    settle(checkpoints.prepare(manager.lease(shard_id), target, batch_id, read_through=target))
                with manager.fenced(shard_id) as settle:
                    settle(checkpoints.commit(manager.lease(shard_id), batch_id, run_id=run_id, records=result.records))
                progressed = progressed or result.reached_shard_end
            if not progressed:
                break
    manager.release()
    return read


def _print_status(store: LeaseStore, lineage: Lineage) -> None:
    print(f"\n{'shard':<22} {'parents':<45} {'depth':>5} {'state':<7} {'checkpoint':<58} owner")
    leases = {lease.lease_key: lease for lease in store.list_leases()}
    for shard_id in lineage.order:
        lease = leases.get(shard_id)
        parents = ", ".join(lineage.shards[shard_id].parent_ids) or "-"
        state = "closed" if lineage.shards[shard_id].closed else "open"
        checkpoint = str(lease.checkpoint) if lease else "-"
        owner = (lease.lease_owner if lease else None) or "-"
        print(f"{shard_id:<22} {parents:<45} {lineage.depth(shard_id):>5} {state:<7} {checkpoint:<58} {owner}")


if __name__ == "__main__":
    sys.exit(main())
