"""Where a stream's consumer is: its shards, leases, checkpoints and lag, its output's last batch
and files (typed values, :mod:`kinesis_batch.status.values`), and its history."""

from kinesis_batch.status.read import (
    history_rows,
    output_status,
    publishes_to,
    run_rows,
    shard_status,
    stream_status,
    table_status,
)
from kinesis_batch.status.values import (
    FilesStatus,
    OutputStatus,
    PublishesTo,
    ShardOutput,
    ShardStatus,
    StreamStatus,
)

__all__ = [
    "FilesStatus",
    "OutputStatus",
    "PublishesTo",
    "ShardOutput",
    "ShardStatus",
    "StreamStatus",
    "history_rows",
    "output_status",
    "publishes_to",
    "run_rows",
    "shard_status",
    "stream_status",
    "table_status",
]
