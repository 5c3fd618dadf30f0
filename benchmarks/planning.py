"""Planning at scale: listing, lineage and planning for a long stream history, and lease
acquisition / prepare / commit for many shards, with the time per shard at two sizes (a cost
per shard that grows with the size is super-linear).

    .venv/bin/python -m benchmarks.planning           # 5,500-shard history; leases for 250 and 500 shards
    .venv/bin/python -m benchmarks.planning --quick   # 550-shard history; leases for 25 and 50 shards (CI)

The history is real: kinesalite creates the stream and performs every split and merge.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devkit.stack import LocalStack, start_kinesalite, start_moto, wait_active

from benchmarks.common import dynamodb_calls, machine, plain_client
from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.checkpoints.store import DynamoDBCheckpointStore
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.planning import plan_run
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards

SEQUENCE = "49680451707726228688800280510064766505084075351574839298"


def build_history(kinesis: Any, stream: str, initial: int, splits: int, merges: int) -> None:
    """``initial`` shards, then ``splits`` splits and ``merges`` merges of random open shards."""
    kinesis.create_stream(StreamName=stream, ShardCount=initial)
    wait_active(kinesis, stream)
    rng = random.Random(7)
    operations = ["split"] * splits + ["merge"] * merges
    rng.shuffle(operations)
    for number, operation in enumerate(operations, 1):
        shards = sorted((s for s in list_shards(kinesis, stream) if not s.closed), key=lambda s: s.starting_hash_key)
        if operation == "split":
            shard = rng.choice([s for s in shards if s.ending_hash_key - s.starting_hash_key > 1])
            middle = (shard.starting_hash_key + shard.ending_hash_key + 1) // 2
            kinesis.split_shard(StreamName=stream, ShardToSplit=shard.shard_id, NewStartingHashKey=str(middle))
        else:
            at = rng.randrange(len(shards) - 1)
            kinesis.merge_shards(
                StreamName=stream, ShardToMerge=shards[at].shard_id, AdjacentShardToMerge=shards[at + 1].shard_id
            )
        wait_active(kinesis, stream)
        if number % 250 == 0:
            print(f"  {number}/{len(operations)} reshards", flush=True)


def cpu(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.process_time()
    result = call()
    return result, time.process_time() - started


def wall(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def plan_history(kinesis: Any, stream: str) -> None:
    shards, listing = wall(lambda: list_shards(kinesis, stream))
    lineage, building = cpu(lambda: Lineage.build(shards))
    # Leases as after many runs: every closed shard finished, every open one at a checkpoint.
    leases = {
        s.shard_id: Lease(s.shard_id, checkpoint=Checkpoint.shard_end() if s.closed else Checkpoint.at(SEQUENCE))
        for s in shards
    }
    first = Checkpoint.trim_horizon()
    fresh, planning_fresh = cpu(
        lambda: plan_run(stream, lineage, {}, worker_id="w", now_ms=0, initial=first)  # the first run
    )
    steady, planning = cpu(lambda: plan_run(stream, lineage, leases, worker_id="w", now_ms=0, initial=first))
    closed = sum(1 for s in shards if s.closed)
    n = len(shards)
    print(f"history: {n:,} shards ({closed:,} closed), {len(lineage.order):,} in lineage order")
    print("| step | s | per shard |\n|---|---|---|")
    for name, seconds in [
        ("ListShards, all pages (wall, endpoint included)", listing),
        ("Lineage.build (CPU)", building),
        (f"plan_run, first run: {len(fresh.ranges):,} ranges in {len(fresh.waves())} waves (CPU)", planning_fresh),
        (f"plan_run, steady state: {len(steady.ranges):,} ranges (CPU)", planning),
    ]:
        print(f"| {name} | {seconds:.3f} | {seconds / n * 1e6:,.0f} us |")


def lease_operations(dynamodb: Any, shards: int) -> tuple[dict[str, float], int]:
    """Create, take, prepare and commit ``shards`` leases the way a run does; seconds per step,
    and the DynamoDB calls made in all (counted on the client)."""
    calls = dynamodb_calls(dynamodb)
    store = LeaseStore(dynamodb, f"bench-leases-{shards}-{time.time_ns()}")
    checkpoints = DynamoDBCheckpointStore(store)
    checkpoints.create_checkpoint_store_if_not_exists()
    keys = [f"shardId-{i:012d}" for i in range(shards)]
    manager = LeaseManager(store, "bench-worker", 600)
    seconds: dict[str, float] = {}
    _, seconds["create"] = wall(lambda: manager.ensure_leases([Lease(key) for key in keys]))
    _, seconds["take"] = wall(lambda: manager.take(keys))

    end = Checkpoint.at(SEQUENCE)

    def prepare() -> None:  # as a run marks its leases: side by side, fenced
        manager.write_each(keys, lambda lease: checkpoints.prepare(lease, end, "batch-1", read_through=end))

    def commit() -> None:  # as a run commits: one transaction at a time (see CatchUpRun.commit)
        commit_one = lambda lease: checkpoints.commit(lease, "batch-1", run_id="run-1", records=1)  # noqa: E731
        manager.write_each(keys, commit_one, concurrency=1)

    _, seconds["prepare"] = wall(prepare)
    _, seconds["commit"] = wall(commit)
    _, seconds["release"] = wall(manager.release)
    return seconds, sum(calls.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 550-shard history; 25 and 50 leases (CI)")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    print(f"# planning at scale: {machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-bench-") as logs:
        kinesalite = start_kinesalite(Path(logs), shard_limit=7000)
        moto = start_moto(Path(logs))
        try:
            stack = LocalStack(moto, {"kinesalite": kinesalite})
            os.environ.update(stack.env("kinesalite"))
            stream = f"bench-history-{int(time.time())}"
            took = time.monotonic()
            build_history(plain_client("kinesis"), stream, 3000 // scale, 1000 // scale, 500 // scale)
            print(f"history built by kinesalite in {time.monotonic() - took:.0f} s\n", flush=True)
            plan_history(kinesis_client(), stream)
            print("\n| leases | create | take | prepare | commit | release | per shard (all five) | calls per shard |")
            print("|---|---|---|---|---|---|---|---|")
            per_shard = []
            for shards in (250 // scale, 500 // scale):
                seconds, calls = lease_operations(dynamodb_client(), shards)
                per_shard.append(sum(seconds.values()) / shards)
                cells = " | ".join(f"{s:.2f} s" for s in seconds.values())
                print(f"| {shards} | {cells} | {per_shard[-1] * 1000:.1f} ms | {calls / shards:.2f} |")
            print(f"\ntime per shard at 2x the leases / at 1x: {per_shard[1] / per_shard[0]:.2f} (1.0 = linear)")
        finally:
            kinesalite.stop()
            moto.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
