"""Creating, resharding and filling test streams on an emulator (test helper, not product code)."""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from devkit.stack import wait_active

from kinesis_batch import list_shards
from kinesis_batch.shards.model import Shard


class StreamFactory:
    def __init__(self, client: Any, prefix: str = "t") -> None:
        self.client = client
        self.prefix = re.sub(r"[^A-Za-z0-9_.-]", "-", prefix)[:60]
        self.created: list[str] = []

    def create(self, shards: int = 1, name: str = "") -> str:
        """A new stream, deleted after the test: ``name``, or the test's name and a suffix."""
        name = name or f"{self.prefix}-{uuid.uuid4().hex[:8]}"
        deadline = time.monotonic() + 10
        while True:  # a name used by the test before: its stream may still be going
            try:
                self.client.create_stream(StreamName=name, ShardCount=shards)
                break
            except self.client.exceptions.ResourceInUseException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.created.append(name)
        wait_active(self.client, name)
        return name

    def delete_all(self) -> None:
        for name in self.created:
            with contextlib.suppress(self.client.exceptions.ResourceNotFoundException):
                self.client.delete_stream(StreamName=name)


def open_shards(client: Any, name: str) -> list[Shard]:
    return [s for s in list_shards(client, name) if not s.closed]


def split(client: Any, name: str, shard: Shard) -> None:
    """Split ``shard`` in the middle of its hash range."""
    middle = (shard.starting_hash_key + shard.ending_hash_key + 1) // 2
    client.split_shard(StreamName=name, ShardToSplit=shard.shard_id, NewStartingHashKey=str(middle))
    wait_active(client, name)


def merge(client: Any, name: str, lower: Shard, upper: Shard) -> None:
    client.merge_shards(StreamName=name, ShardToMerge=lower.shard_id, AdjacentShardToMerge=upper.shard_id)
    wait_active(client, name)


def put(
    client: Any,
    name: str,
    count: int,
    *,
    key_prefix: str = "key",
    keys: int = 16,
    start: int = 0,
    payload: Callable[[int], bytes] = lambda i: str(i).encode(),
) -> list[str]:
    """Put ``count`` records (data ``payload(i)``, by default ``b"<i>"``) over ``keys`` partition
    keys; returns their data."""
    sent = []
    for first in range(start, start + count, 500):
        batch = [
            {"Data": payload(i), "PartitionKey": f"{key_prefix}-{i % keys}"}
            for i in range(first, min(first + 500, start + count))
        ]
        response = client.put_records(StreamName=name, Records=batch)
        assert response.get("FailedRecordCount", 0) == 0, response
        sent.extend(r["Data"].decode() for r in batch)
    return sent


def put_at_hash(client: Any, name: str, data: bytes, hash_key: int) -> dict[str, Any]:
    return dict(client.put_record(StreamName=name, Data=data, PartitionKey="k", ExplicitHashKey=str(hash_key)))


def put_kib(client: Any, name: str, count: int, *, kib: int = 1, hash_key: int | None = None) -> list[str]:
    """``count`` records of ``kib`` KiB (data ``b"<i padded to 8>xxx..."``) over 50 partition
    keys, or all into the shard owning ``hash_key``; returns their data."""
    sent = []
    routing = {} if hash_key is None else {"ExplicitHashKey": str(hash_key)}
    for first in range(0, count, 500):
        batch = [
            {"Data": f"{i:>8}".encode() + b"x" * (kib * 1024 - 8), "PartitionKey": f"k{i % 50}", **routing}
            for i in range(first, min(first + 500, count))
        ]
        assert client.put_records(StreamName=name, Records=batch)["FailedRecordCount"] == 0
        sent.extend(r["Data"].decode() for r in batch)
    return sent


def encrypted_stream(kinesis: Any, streams: StreamFactory, account: str, *, records: int = 4) -> tuple[str, str]:
    """A new stream of ``records`` records, encrypted with a customer-managed KMS key of
    ``account`` (kinesis-local: kinesalite knows no encryption): its name, and the key's ARN."""
    name = streams.create(shards=1)
    key = f"arn:aws:kms:us-east-1:{account}:key/0b9e5c37-8a3f-4d7e-9d1c-5f1f0c2b6a11"
    kinesis.start_stream_encryption(StreamName=name, EncryptionType="KMS", KeyId=key)
    wait_active(kinesis, name)
    put(kinesis, name, records)
    return name, key
