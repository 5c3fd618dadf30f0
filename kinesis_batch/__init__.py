"""kinesis-batch: a batch catch-up consumer for Amazon Kinesis Data Streams.

The public API is what this module exports; submodules are implementation details unless
their own docstrings say otherwise. The core imports neither airflow nor pyspark.
"""

from kinesis_batch.checkpoints.history import HistoryEntry
from kinesis_batch.checkpoints.model import Checkpoint, Sentinel
from kinesis_batch.checkpoints.store import CheckpointStore, DynamoDBCheckpointStore
from kinesis_batch.errors import (
    CheckpointOrderError,
    DependencyError,
    IllegalArgumentError,
    InvalidStateError,
    KinesisBatchError,
    LeaseError,
    LeaseLostError,
    LeaseTableNotFoundError,
    LineageError,
    MalformedLeaseError,
    RetryableError,
    ShutdownError,
    StreamNotFoundError,
    ThrottledError,
    TrimmedDataError,
)
from kinesis_batch.leases.manager import LeaseManager, TakeResult
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.renewer import LeaseRenewer
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards
from kinesis_batch.shards.model import Record, Shard, sequence_key
from kinesis_batch.shards.positions import EndBound, StartPosition
from kinesis_batch.shards.reader import ReadLimits, ReadResult, ShardReader

__version__ = "0.1.0"

__all__ = [
    "Checkpoint",
    "CheckpointOrderError",
    "CheckpointStore",
    "DependencyError",
    "DynamoDBCheckpointStore",
    "EndBound",
    "HistoryEntry",
    "IllegalArgumentError",
    "InvalidStateError",
    "KinesisBatchError",
    "Lease",
    "LeaseError",
    "LeaseLostError",
    "LeaseManager",
    "LeaseRenewer",
    "LeaseStore",
    "LeaseTableNotFoundError",
    "Lineage",
    "LineageError",
    "MalformedLeaseError",
    "ReadLimits",
    "ReadResult",
    "Record",
    "RetryableError",
    "Sentinel",
    "Shard",
    "ShardReader",
    "ShutdownError",
    "StartPosition",
    "StreamNotFoundError",
    "TakeResult",
    "ThrottledError",
    "TrimmedDataError",
    "list_shards",
    "sequence_key",
]
