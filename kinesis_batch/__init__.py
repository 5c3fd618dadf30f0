"""kinesis-batch: a batch catch-up consumer for Amazon Kinesis Data Streams.

The public API is what this module exports (``__all__``, held by tests/test_package.py):

- the run: :class:`CatchUpRun` with its settings (:class:`RunConfig`, :class:`ReadLimits`,
  :class:`DecodeSettings`) and its :class:`RunReport`; :func:`plan_now`, what a run would read;
  :class:`StopRequest`, how a caller stops a run (or a maintenance) at its next safe point;
  :class:`Origin` (a :class:`ParentRun` of :class:`RunRef`), who drives a run, as its
  OpenLineage events name it;
- the sinks: :class:`Output` (a format and where) opens a :class:`Stored` output, whose
  :class:`Sink` face publishes a batch with its :class:`CommitRecord`; :func:`maintain` keeps its table fast
  (:class:`MaintainSettings`, :class:`MaintenanceReport`);
- the error tree (:mod:`kinesis_batch.errors`), and :func:`classify`, what to do with an error;
- the building blocks a consumer of one's own is made of: shards and their lineage, the shard
  reader, leases, checkpoints.

Submodules are implementation details unless their own docstrings say otherwise. The core
imports neither airflow, dagster nor pyspark.
"""

from kinesis_batch.checkpoints.history import HistoryEntry
from kinesis_batch.checkpoints.store import DynamoDBCheckpointStore
from kinesis_batch.config import RunConfig
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.errors import (
    AccessDeniedError,
    BadRecordError,
    CheckpointOrderError,
    DependencyError,
    ForeignOutputError,
    ForeignTableError,
    IllegalArgumentError,
    InvalidStateError,
    KeyUnusableError,
    KinesisBatchError,
    LeaseError,
    LeaseLostError,
    LeaseTableNotFoundError,
    LineageError,
    MalformedLeaseError,
    RetryableError,
    ShutdownError,
    StreamNotFoundError,
    StreamRecreatedError,
    ThrottledError,
    TrimmedDataError,
    classify,
)
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.renewer import LeaseRenewer
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.maintenance import MaintainSettings, MaintenanceReport, maintain
from kinesis_batch.openlineage.origin import Origin, ParentRun, RunRef
from kinesis_batch.output import CommitRecord, Output, ShardCommit, Sink, Stored, open_sink
from kinesis_batch.run import CatchUpRun, RunReport, plan_now
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards
from kinesis_batch.shards.model import Record, Shard
from kinesis_batch.shards.positions import EndBound, StartPosition
from kinesis_batch.shards.reader import ReadResult, ShardReader
from kinesis_batch.stopping import StopRequest

__version__ = "0.1.0"

__all__ = [
    "AccessDeniedError",
    "BadRecordError",
    "CatchUpRun",
    "Checkpoint",
    "CheckpointOrderError",
    "CommitRecord",
    "DecodeSettings",
    "DependencyError",
    "DynamoDBCheckpointStore",
    "EndBound",
    "ForeignOutputError",
    "ForeignTableError",
    "HistoryEntry",
    "IllegalArgumentError",
    "InvalidStateError",
    "KeyUnusableError",
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
    "MaintainSettings",
    "MaintenanceReport",
    "MalformedLeaseError",
    "Origin",
    "Output",
    "ParentRun",
    "ReadLimits",
    "ReadResult",
    "Record",
    "RetryableError",
    "RunConfig",
    "RunRef",
    "RunReport",
    "Shard",
    "ShardCommit",
    "ShardReader",
    "ShutdownError",
    "Sink",
    "StartPosition",
    "StopRequest",
    "Stored",
    "StreamNotFoundError",
    "StreamRecreatedError",
    "ThrottledError",
    "TrimmedDataError",
    "classify",
    "list_shards",
    "maintain",
    "open_sink",
    "plan_now",
]
