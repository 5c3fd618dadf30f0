"""A run's OpenLineage events, made from what the run knows (pure but for the clock).

- **Run**: its id is a UUID made from the consumer (lease table) and the run id, so every
  process of one run (an Airflow DAG's tasks) names it alike. START when it begins; COMPLETE
  with its report; FAIL with the one-line error; ABORT when a lost lease or a stop ended it.
- **Job**: namespace ``OPENLINEAGE_NAMESPACE`` (default ``kinesis-batch``), name the consumer.
- **Input**: the stream (kinesis_batch.openlineage.naming).
- **Outputs** (COMPLETE): each table written and the dead-letter output, each with its rows
  (``outputStatistics``) and, where known, its columns (``schema``).
- **Run facet** ``kinesisBatch``: the batch id, records, dead letters and their commonest
  reasons, and per shard the checkpoint its read began after (``from``) and the last one it
  read (``to``: a sequence number, or ``SHARD_END``), with its records.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any

import attr
import pyarrow as pa
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import RunFacet, error_message_run, output_statistics_output_dataset, schema_dataset

from kinesis_batch.landing import KEPT_REASONS, Landing, total
from kinesis_batch.output.records import ShardCommit

#: Who made the events (a URI, as the spec asks; the project has no public address to name).
PRODUCER = f"urn:kinesis-batch:{version('kinesis-batch')}"
#: Where the ``kinesisBatch`` run facet is described (the project's docs, shipped beside it).
FACET_SCHEMA = "urn:kinesis-batch:docs/operations.md#lineage"
RUN_NAMESPACE = uuid.UUID("5b0a2f7e-1c4d-4e8a-9f6b-6b1c2d3e4f50")  # of the runs' UUIDs


@attr.define
class KinesisBatchRunFacet(RunFacet):
    """What a run of kinesis-batch read and what became of it."""

    batchId: str  # camelCase, as the spec's facets are
    records: int
    deadLetters: int
    reasons: dict[str, int]
    shards: list[dict[str, Any]]

    @staticmethod
    def _get_schema() -> str:
        return FACET_SCHEMA


@attr.define
class MaintenanceFacet(RunFacet):
    """Which maintenance of kinesis-batch a run was (its id names its report and its markers)."""

    maintenanceId: str  # camelCase, as the spec's facets are

    @staticmethod
    def _get_schema() -> str:
        return FACET_SCHEMA


@dataclass(frozen=True)
class Written:
    """One output a run wrote: its OpenLineage name, rows, files and bytes (None: not known),
    and columns (None: not known)."""

    namespace: str
    name: str
    rows: int | None
    columns: pa.Schema | None = None
    files: int | None = None
    size: int | None = None


def run_uuid(consumer: str, run_id: str) -> str:
    return str(uuid.uuid5(RUN_NAMESPACE, f"{consumer}/{run_id}"))


def event(
    state: RunState,
    *,
    job: str,
    run: str,
    inputs: Sequence[tuple[str, str]],
    written: Sequence[Written] = (),
    facets: Mapping[str, RunFacet] | None = None,
) -> RunEvent:
    """One event of run ``run`` (a UUID) of ``job``, reading ``inputs`` ((namespace, name) each)."""
    outputs = [
        OutputDataset(
            namespace=w.namespace,
            name=w.name,
            facets={"schema": _schema(w.columns)} if w.columns is not None else {},
            outputFacets={
                "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                    rowCount=w.rows, size=w.size, fileCount=w.files, producer=PRODUCER
                )
            },
        )
        for w in written
    ]
    return RunEvent(
        eventType=state,
        eventTime=datetime.now(UTC).isoformat(),
        run=Run(runId=run, facets=dict(facets or {})),
        job=Job(namespace=os.environ.get("OPENLINEAGE_NAMESPACE", "kinesis-batch"), name=job),
        producer=PRODUCER,
        inputs=[InputDataset(namespace=namespace, name=name) for namespace, name in inputs],
        outputs=outputs,
    )


def run_facet(batch_id: str, shards: Sequence[ShardCommit]) -> KinesisBatchRunFacet:
    landing = total([s.landing for s in shards]) or Landing()
    return KinesisBatchRunFacet(
        producer=PRODUCER,
        batchId=batch_id,
        records=sum(s.records for s in shards),
        deadLetters=landing.dead_letters,
        reasons=dict(sorted(landing.reasons.items(), key=lambda item: -item[1])[:KEPT_REASONS]),
        shards=[{"shardId": s.shard_id, "from": str(s.start), "to": str(s.end), "records": s.records} for s in shards],
    )


def error_facet(message: str) -> error_message_run.ErrorMessageRunFacet:
    return error_message_run.ErrorMessageRunFacet(message=message, programmingLanguage="python", producer=PRODUCER)


def _schema(columns: pa.Schema) -> schema_dataset.SchemaDatasetFacet:
    fields = [schema_dataset.SchemaDatasetFacetFields(name=f.name, type=str(f.type)) for f in columns]
    return schema_dataset.SchemaDatasetFacet(fields=fields, producer=PRODUCER)


__all__ = ["KinesisBatchRunFacet", "MaintenanceFacet", "Written", "error_facet", "event", "run_facet", "run_uuid"]
