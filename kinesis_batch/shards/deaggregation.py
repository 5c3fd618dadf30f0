"""KPL aggregation: one Kinesis record carrying many user records.

Format (as the KPL writes it): 4 magic bytes, a protobuf ``AggregatedRecord`` (messages from
the maintained aws-kinesis-agg package), then the MD5 of the protobuf bytes. A record without
the magic, or whose digest or protobuf does not check out, is a plain user record: that is
what the KCL does too, since a producer may legitimately send bytes that start with the magic.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from datetime import datetime

from google.protobuf.message import DecodeError

from kinesis_batch.shards.model import Record

# aws-kinesis-agg's generated messages_pb2 imports config_pb2 as a top-level module, so its
# deaggregator puts the package's folder (and site-packages a second time) on sys.path. Import
# it for that, then put sys.path back: a second site-packages entry makes importlib.metadata
# see every distribution twice (Airflow then warns "Plugin 'kinesis_batch' already registered").
_path = list(sys.path)
try:
    from aws_kinesis_agg import deaggregator as _  # noqa: F401
    from aws_kinesis_agg import messages_pb2
finally:
    sys.path[:] = _path

MAGIC = b"\xf3\x89\x9a\xc2"
_DIGEST_SIZE = 16


def sub_records(data: bytes) -> list[tuple[str, bytes, str | None]] | None:
    """The (partition key, data, explicit hash key) of each user record inside one Kinesis
    record's ``data``, in order (their sub-sequence numbers 0, 1, ...); None when it is not
    an aggregate."""
    aggregated = _parse(data)
    if aggregated is None:
        return None
    keys = aggregated.partition_key_table
    hash_keys = aggregated.explicit_hash_key_table
    return [
        (
            keys[sub.partition_key_index],
            sub.data,
            hash_keys[sub.explicit_hash_key_index] if sub.HasField("explicit_hash_key_index") else None,
        )
        for sub in aggregated.records
    ]


def user_records(
    shard_id: str,
    sequence_number: str,
    partition_key: str,
    data: bytes,
    arrival: datetime,
    explicit_hash_key: str | None = None,
) -> Iterator[Record]:
    """The user records inside one Kinesis record, with their sub-sequence numbers (0, 1, ...)."""
    subs = sub_records(data)
    if subs is None:
        yield Record(shard_id, sequence_number, 0, partition_key, data, arrival, explicit_hash_key)
        return
    for index, (key, sub_data, hash_key) in enumerate(subs):
        yield Record(shard_id, sequence_number, index, key, sub_data, arrival, hash_key)


def _parse(data: bytes) -> messages_pb2.AggregatedRecord | None:
    if len(data) <= len(MAGIC) + _DIGEST_SIZE or not data.startswith(MAGIC):
        return None
    body, digest = data[len(MAGIC) : -_DIGEST_SIZE], data[-_DIGEST_SIZE:]
    if hashlib.md5(body).digest() != digest:
        return None
    message = messages_pb2.AggregatedRecord()
    try:
        message.ParseFromString(body)
    except DecodeError:
        return None
    n_keys = len(message.partition_key_table)
    n_hash = len(message.explicit_hash_key_table)
    for sub in message.records:
        if sub.partition_key_index >= n_keys:
            return None
        if sub.HasField("explicit_hash_key_index") and sub.explicit_hash_key_index >= n_hash:
            return None
    return message
