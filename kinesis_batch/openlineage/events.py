"""A run's OpenLineage events, made from what the run knows (pure but for the clock). Every
event is valid against the specification's JSON schemas (spec 2-0-2 and its facets), and our
own facets against ``facets.json`` beside this module.

- **Run**: its id is a UUID made from the consumer (lease table) and the run id, so every
  process of one run (an Airflow DAG's tasks) names it alike. START when it begins; COMPLETE
  with its report; FAIL with the one-line error; ABORT when a lost lease or a stop ended it.
  ``parent`` (kinesis_batch.openlineage.origin): the run that started it and the root of both.
- **Job**: namespace ``OPENLINEAGE_NAMESPACE`` (default ``kinesis-batch``), name the consumer;
  ``jobType``: processing ``BATCH``, integration ``KINESIS_BATCH``, job type ``JOB`` (a
  maintenance: ``MAINTENANCE``); ``sourceCodeLocation`` where the adapter knows it.
- **Input**: the stream (kinesis_batch.openlineage.naming); at COMPLETE its records
  (``inputStatistics``) and each shard's range (``kinesisShards``: from the checkpoint the read
  began after to the last one it read, a sequence number or ``SHARD_END``).
- **Outputs** (COMPLETE): each table written and the dead-letter output, each with its rows
  (``outputStatistics``) and, where known, its columns (``schema``).
- **Run facet** ``kinesisBatch``: the batch id, records, dead letters and their commonest
  reasons.
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
from openlineage.client.facet_v2 import (
    InputDatasetFacet,
    JobFacet,
    RunFacet,
    error_message_run,
    input_statistics_input_dataset,
    job_type_job,
    output_statistics_output_dataset,
    parent_run,
    schema_dataset,
    source_code_location_job,
)

from kinesis_batch.landing import KEPT_REASONS, Landing, total
from kinesis_batch.openlineage.naming import INTEGRATION, PROCESSING, RUN_JOB
from kinesis_batch.openlineage.origin import ALONE, Origin, ParentRun
from kinesis_batch.storage.records import ShardCommit

#: Who made the events (a URI, as the spec asks; the project has no public address to name).
PRODUCER = f"urn:kinesis-batch:{version('kinesis-batch')}"
#: The $id of our facets' schema (facets.json, shipped beside this module).
FACETS_SCHEMA = "urn:kinesis-batch:openlineage:facets:1-0-0"
RUN_NAMESPACE = uuid.UUID("5b0a2f7e-1c4d-4e8a-9f6b-6b1c2d3e4f50")  # of the runs' UUIDs


@attr.define
class KinesisBatchRunFacet(RunFacet):
    """What a run of kinesis-batch read and what became of it."""

    batchId: str  # camelCase, as the spec's facets are
    records: int
    deadLetters: int
    reasons: dict[str, int]

    @staticmethod
    def _get_schema() -> str:
        return f"{FACETS_SCHEMA}#/$defs/KinesisBatchRunFacet"


@attr.define
class MaintenanceFacet(RunFacet):
    """Which maintenance of kinesis-batch a run was (its id names its report and its markers)."""

    maintenanceId: str  # camelCase, as the spec's facets are

    @staticmethod
    def _get_schema() -> str:
        return f"{FACETS_SCHEMA}#/$defs/KinesisBatchMaintenanceRunFacet"


@attr.define
class KinesisShardsFacet(InputDatasetFacet):
    """Each shard's range a run read: ``shardId``, ``from``, ``to``, ``records``."""

    shards: list[dict[str, Any]]

    @staticmethod
    def _get_schema() -> str:
        return f"{FACETS_SCHEMA}#/$defs/KinesisShardsInputDatasetFacet"


@dataclass(frozen=True)
class Read:
    """One input a run read: its OpenLineage name and, once known (COMPLETE), what it read of it:
    its shards' commits (a stream's) or nothing said (a maintained table's)."""

    namespace: str
    name: str
    shards: tuple[ShardCommit, ...] | None = None


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
    inputs: Sequence[Read],
    written: Sequence[Written] = (),
    facets: Mapping[str, RunFacet] | None = None,
    job_type: str = RUN_JOB,
    origin: Origin = ALONE,
) -> RunEvent:
    """One event of run ``run`` (a UUID) of ``job`` (a ``job_type``), reading ``inputs``."""
    run_facets = dict(facets or {})
    if origin.parent is not None:
        run_facets["parent"] = parent_facet(origin.parent)
    job_facets: dict[str, JobFacet] = {
        "jobType": job_type_job.JobTypeJobFacet(
            processingType=PROCESSING, integration=INTEGRATION, jobType=job_type, producer=PRODUCER
        )
    }
    if origin.source is not None:
        job_facets["sourceCodeLocation"] = source_code_location_job.SourceCodeLocationJobFacet(
            type="file", url=origin.source, producer=PRODUCER
        )
    return RunEvent(
        eventType=state,
        eventTime=datetime.now(UTC).isoformat(),
        run=Run(runId=run, facets=run_facets),
        job=Job(namespace=os.environ.get("OPENLINEAGE_NAMESPACE", "kinesis-batch"), name=job, facets=job_facets),
        producer=PRODUCER,
        inputs=[_input(read) for read in inputs],
        outputs=[_output(w) for w in written],
    )


def run_facet(batch_id: str, shards: Sequence[ShardCommit]) -> KinesisBatchRunFacet:
    landing = total([s.landing for s in shards]) or Landing()
    return KinesisBatchRunFacet(
        producer=PRODUCER,
        batchId=batch_id,
        records=sum(s.records for s in shards),
        deadLetters=landing.dead_letters,
        reasons=dict(sorted(landing.reasons.items(), key=lambda item: -item[1])[:KEPT_REASONS]),
    )


def error_facet(message: str) -> error_message_run.ErrorMessageRunFacet:
    return error_message_run.ErrorMessageRunFacet(message=message, programmingLanguage="python", producer=PRODUCER)


def parent_facet(parent: ParentRun) -> parent_run.ParentRunFacet:
    return parent_run.ParentRunFacet(
        run=parent_run.Run(runId=parent.parent.run_id),
        job=parent_run.Job(namespace=parent.parent.namespace, name=parent.parent.name),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=parent.root.run_id),
            job=parent_run.RootJob(namespace=parent.root.namespace, name=parent.root.name),
        ),
        producer=PRODUCER,
    )


def _input(read: Read) -> InputDataset:
    if read.shards is None:
        return InputDataset(namespace=read.namespace, name=read.name)
    shards = [
        {"shardId": s.shard_id, "from": str(s.start), "to": str(s.end), "records": s.records} for s in read.shards
    ]
    statistics = input_statistics_input_dataset.InputStatisticsInputDatasetFacet(
        rowCount=sum(s.records for s in read.shards), producer=PRODUCER
    )
    return InputDataset(
        namespace=read.namespace,
        name=read.name,
        inputFacets={
            "inputStatistics": statistics,
            "kinesisShards": KinesisShardsFacet(shards=shards, producer=PRODUCER),
        },
    )


def _output(w: Written) -> OutputDataset:
    return OutputDataset(
        namespace=w.namespace,
        name=w.name,
        facets={"schema": _schema(w.columns)} if w.columns is not None else {},
        outputFacets={
            "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                rowCount=w.rows, size=w.size, fileCount=w.files, producer=PRODUCER
            )
        },
    )


def _schema(columns: pa.Schema) -> schema_dataset.SchemaDatasetFacet:
    fields = [schema_dataset.SchemaDatasetFacetFields(name=f.name, type=str(f.type)) for f in columns]
    return schema_dataset.SchemaDatasetFacet(fields=fields, producer=PRODUCER)


__all__ = [
    "KinesisBatchRunFacet",
    "KinesisShardsFacet",
    "MaintenanceFacet",
    "Read",
    "Written",
    "error_facet",
    "event",
    "parent_facet",
    "run_facet",
    "run_uuid",
]
