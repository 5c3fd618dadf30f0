"""Step 1, survey and plan: the stream's shards and lineage beside the lease table, and what a
run would read from them (kinesis_batch.planning, pure). Read-only: nothing is leased or created.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from kinesis_batch import ownership
from kinesis_batch.leases.model import Lease
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.planning import RunPlan, plan_run
from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lineage import Lineage
from kinesis_batch.shards.listing import list_shards

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient

    from kinesis_batch.run.context import RunContext


def survey(kinesis: KinesisClient, store: LeaseStore, stream: str) -> tuple[Lineage, dict[str, Lease]]:
    """The stream's lineage (depths the leases remember kept, for shards retention dropped the
    parents of) and its leases by key."""
    leases = {lease.lease_key: lease for lease in store.list_leases()}
    depths = {key: lease.lineage_depth for key, lease in leases.items() if lease.lineage_depth is not None}
    return Lineage.build(list_shards(kinesis, stream), known_depths=depths), leases


def plan_now(
    kinesis: KinesisClient,
    dynamodb: DynamoDBClient,
    stream: str,
    *,
    table: str,
    worker_id: str = "",
    initial: Checkpoint | None = None,
    until: datetime | None = None,
    clock: Callable[[], float] = time.time,
) -> RunPlan:
    """What a run of ``worker_id`` would read now: no output, no Spark, nothing leased or
    created. A stream without a lease table yet plans its first run. The table must be this
    stream's (kinesis_batch.ownership)."""
    store = LeaseStore(dynamodb, table)
    ownership.check(kinesis, store, stream)  # an unknown stream, or a table not this stream's, is said first
    if store.table_exists():
        lineage, leases = survey(kinesis, store, stream)
    else:
        lineage, leases = Lineage.build(list_shards(kinesis, stream)), {}
    return plan_run(
        stream,
        lineage,
        leases,
        worker_id=worker_id,
        now_ms=int(clock() * 1000),
        initial=initial or Checkpoint.trim_horizon(),
        until=until,
    )


def plan_for(context: RunContext, lineage: Lineage, leases: Mapping[str, Lease]) -> RunPlan:
    """The run's plan over ``lineage`` and ``leases``, at its worker's clock."""
    config = context.config
    return plan_run(
        config.stream,
        lineage,
        leases,
        worker_id=config.worker_id,
        now_ms=context.manager.now_ms(),
        initial=config.initial_position,
        until=config.until,
        batch_id=context.run_id,
    )


__all__ = ["plan_for", "plan_now", "survey"]
