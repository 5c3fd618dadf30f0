"""Pure: what a stream's runs touch, as the permissions each principal needs: the one home of
"what a run touches". ``kinesis-batch iam-policy`` prints them (kinesis_batch.access.policy).

The principals:

- ``worker``: the orchestrator's (an Airflow or Dagster worker, the command line's machine). It
  takes the leases, keeps the history, publishes, commits, sends metrics, starts job runs. When
  the read runs in its own process (Spark ``local``, the embedded default) it is the executors too.
- ``executors``: whoever runs the read step elsewhere: an EMR Serverless job role, a cluster's
  instance profile, a Spark Connect server's role. It reads the stream and the leases (it never
  writes one), writes the batch's files into the output's staging, decodes with the registry.
- ``reader``: a role in the stream's account (``role_arn``), assumed by the two above: its
  permissions read the stream; ``reader-trust``, its trust policy, lets the consumer's account
  assume it (the consumer's own policies say which of its roles may: the two above).
- ``stream-policy``: a stream of another account read without a role: the stream's resource
  policy, letting the consumer's account read it.
- ``kms``: a stream encrypted with a customer-managed key: whoever reads needs ``kms:Decrypt``
  on it (added to their documents), and the key's policy must let them (this document).

:data:`FIELDS` says, for every setting of a stream, what it reaches (or that it reaches nothing
of AWS): a new setting is refused by the tests until it is listed there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kinesis_batch.access import arns
from kinesis_batch.access.arns import Where
from kinesis_batch.backfill.plan import backfill_table
from kinesis_batch.checkpoints.history import history_table_name
from kinesis_batch.output.catalogs import table_folder
from kinesis_batch.output.formats import format_of
from kinesis_batch.settings import StreamSettings
from kinesis_batch.storage.place import is_s3

WORKER, EXECUTORS, READER, STREAM_POLICY, KMS = "worker", "executors", "reader", "stream-policy", "kms"
#: The reader's other document: who may assume it (``reader``: what it may do).
TRUST = "reader-trust"
PRINCIPALS = (WORKER, EXECUTORS, READER, TRUST, STREAM_POLICY, KMS)
BOTH = (WORKER, EXECUTORS)

READ_STREAM = ("kinesis:DescribeStreamSummary", "kinesis:ListShards", "kinesis:GetShardIterator", "kinesis:GetRecords")
#: The executors' reads; DescribeStreamSummary for the read step's own driver (a job run's, a
#: spark-submit's), which says the stream's retention beside what it read.
READ_RECORDS = ("kinesis:DescribeStreamSummary", "kinesis:GetShardIterator", "kinesis:GetRecords")
FILES = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload")
LEASES = (
    "dynamodb:CreateTable", "dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
    "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem", "dynamodb:Scan", "dynamodb:Query",
)  # fmt: skip
READ_LEASES = ("dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:Scan", "dynamodb:Query")
CATALOG = ("glue:GetDatabase", "glue:CreateDatabase", "glue:GetTable", "glue:CreateTable", "glue:UpdateTable")
JOB_RUNS = ("emr-serverless:StartJobRun", "emr-serverless:ListJobRuns", "emr-serverless:GetApplication")
WATCH_JOB_RUNS = (
    "emr-serverless:GetJobRun", "emr-serverless:CancelJobRun", "emr-serverless:GetDashboardForJobRun",
    "emr-serverless:TagResource",
)  # fmt: skip
#: Actions that have no resource type: their statement's Resource is "*", narrowed by a condition.
NO_RESOURCE_TYPE = frozenset({"cloudwatch:PutMetricData"})

#: Every setting of a stream, and what it reaches in AWS ("": nothing).
FIELDS: dict[str, str] = {
    "stream": "the stream (Kinesis), its lease and history tables' default names (DynamoDB)",
    "output": "the output's files (S3) or its table (Glue, and the warehouse's files)",
    "format": "which of the output's kinds: files, or a catalog's table",
    "catalog": "iceberg: the catalog (Glue, when it is a Glue catalog) and its warehouse (S3)",
    "table": "the lease and history tables (DynamoDB)",
    "stream_arn": "the stream, in its own account and region (Kinesis; a stream policy without a role)",
    "role_arn": "the role assumed to read the stream (STS; the reader's documents)",
    "external_id": "the reader's trust policy's condition",
    "emr_serverless": "the application, its job runs, the job role it passes (iam:PassRole), the archive (S3)",
    "schema": "glue://REGISTRY/SCHEMA: the registry (Glue Schema Registry)",
    "dead_letter_output": "the dead letters' files or table (S3, Glue)",
    "route_by": "a routed output: one table per route under the output's template",
    "metrics": "cloudwatch: PutMetricData",
    "metrics_namespace": "cloudwatch: the namespace its PutMetricData is held to",
    **{name: "" for name in (
        "initial_position", "lease_seconds", "spark_master", "spark_remote", "read_limits", "shards_per_task",
        "partition_by", "target_file_mb", "decode", "message", "decompress", "transform", "on_bad_record",
        "schema_evolution", "changes", "key", "sequence_by", "delete_when", "tombstone_hours", "routes",
        "max_new_tables", "lag_threshold_seconds", "dead_letter_threshold", "metrics_level", "pushgateway",
    )},
}  # fmt: skip


@dataclass(frozen=True)
class Condition:
    """One condition of a statement: ``{operator: {key: values}}``."""

    operator: str
    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Need:
    """One statement of one principal's document, with why (``sid``). ``principals``: who a
    resource policy (a trust, a stream's, a key's) lets act; empty in an identity policy.
    ``resources`` is empty only in a trust policy, which names none (the role is its resource)."""

    principal: str
    sid: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: tuple[Condition, ...] = ()
    principals: tuple[str, ...] = ()


@dataclass(frozen=True)
class Catalog:
    """What a run knows of an Iceberg output's catalog (read from pyiceberg's configuration by
    the adapter): its type (``glue``, ``sql``, ...) and its warehouse (where tables' files go)."""

    type: str = ""
    warehouse: str = ""

    @property
    def glue(self) -> bool:
        return self.type == "glue"


def needs(
    settings: StreamSettings, where: Where, *, catalog: Catalog = Catalog(), kms_key: str = "", backfills: bool = False
) -> list[Need]:
    """Every statement of every principal for ``settings``' runs, the consumer's account and
    region ``where``; ``kms_key``: the stream's customer-managed key (DescribeStreamSummary's
    ``KeyId``), if any; ``backfills``: and what any backfill of the stream touches."""
    stream_at = arns.stream_where(settings.stream_arn, where)
    stream = arns.stream(settings.stream_id, stream_at)
    found: list[Need] = []
    readers: tuple[str, ...] = BOTH
    if settings.role_arn:
        found += [Need(who, "AssumeTheStreamsRole", ("sts:AssumeRole",), (settings.role_arn,)) for who in readers]
        found += [Need(READER, "ReadTheStream", READ_STREAM, (stream,))]
        trust = (Condition("StringEquals", "sts:ExternalId", (settings.external_id,)),) if settings.external_id else ()
        found += [Need(TRUST, "TrustTheConsumersAccount", ("sts:AssumeRole",), (), trust, (where.root,))]
        readers = (READER,)
    else:
        found += [
            Need(WORKER, "ReadTheStream", READ_STREAM, (stream,)),
            Need(EXECUTORS, "ReadTheRecords", READ_RECORDS, (stream,)),
        ]
        if stream_at.account != where.account:
            found += [Need(STREAM_POLICY, "ShareTheStream", READ_STREAM, (stream,), (), (where.root,))]
    if kms_key:
        via = (Condition("StringEquals", "kms:ViaService", (f"kinesis.{stream_at.region}.amazonaws.com",)),)
        # A key policy that names the reader's role itself decides alone in the key's account: the
        # role then needs no statement of its own (a root named hands the choice to IAM's policies).
        alone = bool(settings.role_arn) and arns.account_of(settings.role_arn) == arns.account_of(kms_key)
        found += [Need(who, "DecryptTheStream", ("kms:Decrypt",), (kms_key,), via) for who in readers if not alone]
        allowed = (settings.role_arn,) if settings.role_arn else (where.root,)
        found += [Need(KMS, "LetTheConsumerDecrypt", ("kms:Decrypt",), ("*",), via, allowed)]
    tables = (settings.lease_table, history_table_name(settings.lease_table))
    found += [Need(WORKER, "LeasesCheckpointsAndHistory", LEASES, tuple(arns.dynamodb_table(t, where) for t in tables))]
    found += [Need(EXECUTORS, "ReadTheLeases", READ_LEASES, (arns.dynamodb_table(settings.lease_table, where),))]
    outputs = [("Output", settings.destination)]
    if settings.decoding.decoding:
        outputs += [("DeadLetters", settings.dead_letter_destination)]
    for name, output in outputs:
        found += _output(name, output.format, output.output, where, catalog)
    if settings.decoding.from_registry:
        registry, _ = settings.decoding.registry_schema()
        schemas = arns.schema_registry(registry, where)
        found += [
            Need(who, "DecodeWithTheRegistry", ("glue:GetSchemaVersion",), schemas) for who in (WORKER, EXECUTORS)
        ]
    if settings.metrics == "cloudwatch":
        namespace = (Condition("StringEquals", "cloudwatch:namespace", (settings.metrics_namespace,)),)
        found += [Need(WORKER, "PutTheRunsMetrics", ("cloudwatch:PutMetricData",), ("*",), namespace)]
    if settings.emr_serverless is not None:
        found += _job_runs(settings, where)
    if backfills:
        found += _backfills(settings, where, catalog)
    return found


#: What stands for a backfill's id while its names are made as a backfill makes them, then ``*``.
_ANY_BACKFILL = "anybackfillid"


def _backfills(settings: StreamSettings, where: Where, catalog: Catalog) -> list[Need]:
    """Any backfill of the stream (kinesis_batch.backfill.plan), whatever its id: its lease and
    history tables beside the main one's, and its output (with its dead letters) beside the main
    output, where a backfill that names none writes. One that names an output elsewhere needs
    that output's own statements (its flags, printed as a stream's)."""
    tables = (arns.dynamodb_table(backfill_table(settings.lease_table, _ANY_BACKFILL), where),)
    found = [Need(WORKER, "LeasesCheckpointsAndHistory", LEASES, tables)]
    found += [Need(EXECUTORS, "ReadTheLeases", READ_LEASES, tables)]
    main = settings.destination
    output = replace(main, output=format_of(main.format).backfill(main.output, _ANY_BACKFILL))
    outputs = [("Output", output)]
    if settings.decoding.decoding:
        outputs += [("DeadLetters", output.dead_letter(settings.decoding.dead_letter_output))]
    for name, one in outputs:
        found += _output(name, one.format, one.output, where, catalog)
    return [_any_backfill(need) for need in found]


def _any_backfill(need: Need) -> Need:
    def wild(values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(value.replace(_ANY_BACKFILL, "*") for value in values)

    conditions = tuple(replace(condition, values=wild(condition.values)) for condition in need.conditions)
    return replace(need, resources=wild(need.resources), conditions=conditions)


def _output(name: str, format: str, output: str, where: Where, catalog: Catalog) -> list[Need]:
    """An output's (or its dead letters') files and table: the worker publishes, the executors
    write the batch's files into its staging and read the table where it is."""
    found: list[Need] = []
    if format_of(format).catalog:
        namespace, _, table = output.rpartition(".")
        if catalog.glue:
            resources = (
                arns.glue_catalog(where),
                arns.glue_database(namespace, where),
                arns.glue_table(namespace, table, where),
            )
            found += [Need(WORKER, f"{name}Table", CATALOG, resources)]
            found += [Need(EXECUTORS, f"Find{name}Table", ("glue:GetTable",), resources)]
        if not is_s3(catalog.warehouse):
            return found
        folder = table_folder(catalog.warehouse, namespace, table, catalog.type)
    elif is_s3(output):
        folder = output
    else:
        return found  # a local folder: the machine's, no AWS permission
    objects, bucket = arns.s3_objects(folder, where.partition), arns.s3_bucket(folder, where.partition)
    _, prefix = arns.s3_bucket_and_prefix(folder)
    listed = (Condition("StringLike", "s3:prefix", (prefix, f"{prefix}/*")),)
    for who in (WORKER, EXECUTORS):
        found += [
            Need(who, f"{name}Files", FILES, (objects,)),
            Need(who, f"List{name}Files", ("s3:ListBucket",), (bucket,), listed),
        ]
    return found


def _job_runs(settings: StreamSettings, where: Where) -> list[Need]:
    job = settings.emr_serverless
    assert job is not None
    application = arns.emr_application(job.application_id, where)
    passed = (Condition("StringEquals", "iam:PassedToService", ("emr-serverless.amazonaws.com",)),)
    archive = arns.s3_object(job.environment, where.partition) if is_s3(job.environment) else ""
    return [
        Need(WORKER, "StartJobRuns", JOB_RUNS, (application,)),
        Need(WORKER, "WatchAndCancelJobRuns", WATCH_JOB_RUNS, (arns.emr_job_runs(job.application_id, where),)),
        Need(WORKER, "PassTheJobRole", ("iam:PassRole",), (job.execution_role_arn,), passed),
        *[Need(who, "TheEnvironmentArchive", ("s3:GetObject",), (archive,)) for who in BOTH if archive],
    ]


__all__ = [
    "EXECUTORS", "FIELDS", "KMS", "NO_RESOURCE_TYPE", "PRINCIPALS", "READER", "STREAM_POLICY", "TRUST", "WORKER",
    "Catalog", "Condition", "Need", "needs",
]  # fmt: skip
