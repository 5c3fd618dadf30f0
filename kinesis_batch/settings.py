"""A stream's consumer settings: one frozen value, in the user's own terms, checked once when
made. Every adapter draws its options from :data:`OPTIONS` (the command line's flags, the
Airflow DAG's params, the streams file's and Dagster's entries), so a new per-stream setting is
one field here, its check in ``__post_init__``, and its docs.

A check's message starts with the option's ``--flag`` (the command line's form); adapters that
name settings by field (``lease_seconds``) say it their way (:func:`as_field_message`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, Field, asdict, dataclass, fields
from typing import Any

from kinesis_batch import defaults
from kinesis_batch.bounds import NOT_NEGATIVE, POSITIVE, TARGET_FILE_MB, Bound
from kinesis_batch.changes.settings import ENVELOPES, KEY_SEPARATOR, TOMBSTONE_HOURS, ChangeSettings, check_changes
from kinesis_batch.decoding.settings import DECODERS, DECOMPRESSION, ON_BAD_RECORD, SCHEMA_EVOLUTION, DecodeSettings
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.metrics.settings import BACKENDS, NAMESPACE, NONE, SUMMARY, MetricsSettings
from kinesis_batch.metrics.settings import HELP as METRICS_HELP
from kinesis_batch.options import AIRFLOW, CLI, DAGSTER, ORCHESTRATED, coerce, flag, kind, not_a_setting
from kinesis_batch.options import option as _option
from kinesis_batch.output import Output
from kinesis_batch.output.formats import FORMATS, format_of
from kinesis_batch.parsers import (
    default_table,
    parse_connect_url,
    parse_initial_position,
    stream_of_arn,
    validate_role_arn,
    validate_stream_name,
    validate_table_name,
)
from kinesis_batch.routing.routes import DEFAULT_MAX_NEW, RouteRule
from kinesis_batch.routing.settings import check_routing
from kinesis_batch.serverless.settings import ServerlessSettings
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.storage.layout import PartitionBy


@dataclass(frozen=True)
class StreamSettings:
    """Everything a stream's consumer is configured with, whoever runs it. Empty strings and 0
    mean "not set" (the defaults the help names), as a form or a TOML file writes them."""

    stream: str = _option(MISSING, "Kinesis stream name (or its ARN: a stream of another account)")
    output: str = _option(
        MISSING,
        "parquet: a folder (hive-style batch_id=... folders); delta: a path or s3:// URI of the table; "
        "iceberg: NAMESPACE.TABLE",
    )
    format: str = _option(defaults.FORMAT, f"{', '.join(FORMATS)} (default {defaults.FORMAT})", choices=FORMATS)
    catalog: str = _option("", "iceberg: a pyiceberg catalog name (default: 'default', or the embedded one)")
    table: str = _option("", "DynamoDB lease table (default: kinesis-batch-STREAM)")
    stream_arn: str = _option(
        "",
        "a stream of another account, shared with this one through its resource policy: its ARN, by which every "
        "Kinesis call names it (--stream may be the ARN itself)",
        group="account",
    )
    role_arn: str = _option(
        "",
        "a role of the stream's account to read it with: the run's start and every Spark task read with the "
        "role's credentials, renewed before they expire; leases, checkpoints and outputs stay in this account",
        group="account",
    )
    external_id: str = _option("", "--role-arn: the external id the role's trust policy asks for", group="account")
    initial_position: str = _option(
        defaults.INITIAL_POSITION,
        "where a shard without a checkpoint starts: trim_horizon | latest | at_timestamp=ISO8601",
    )
    lease_seconds: float = _option(
        defaults.LEASE_SECONDS,
        "how long a lease lasts unrenewed (renewed while the run works; a dead worker's shards are free again "
        "this soon)",
        bound=Bound(10, 86_400),
    )
    spark_master: str = _option(
        defaults.SPARK_MASTER, f"Spark master (default {defaults.SPARK_MASTER})", where=frozenset({CLI, AIRFLOW})
    )
    spark_remote: str = _option(
        "",
        "a Spark Connect server to read on, sc://HOST:PORT (default: $SPARK_REMOTE, else local Spark on "
        "--spark-master)",
        where=frozenset({CLI, AIRFLOW}),
    )
    emr_serverless: ServerlessSettings | None = _option(  # noqa: RUF009 (a frozen value, None by default)
        None,
        "run the read step as an EMR Serverless job run: application_id, execution_role_arn, environment (the "
        "archive `kinesis-batch package` wrote to S3), conf (Spark settings), timeout_minutes (default 720)",
        where=ORCHESTRATED,  # the command line's own flags: --emr-serverless-application ...
        group="emr_serverless",
        parse=ServerlessSettings.of,
    )
    read_limits: str = _option(
        defaults.READ_LIMITS,
        "kinesis: keep each shard under Kinesis' 5 GetRecords calls/s and 2 MiB/s (default); none: no pacing "
        "(emulators, benchmarks); CALLS,BYTES: your own per-shard pace per second (e.g. 2.5,1048576 leaves half "
        "of each shard to another consumer)",
    )
    shards_per_task: int = _option(
        0,
        "shards one Spark task reads side by side (default 0: the plan spread over every task slot)",
        bound=NOT_NEGATIVE,
    )
    partition_by: str = _option(
        "",
        "a new table's partitions: day (of arrival, the default), hour, day(FIELD), hour(FIELD), identity(FIELD) "
        "or none; an existing table keeps its own",
    )
    target_file_mb: int = _option(
        defaults.TARGET_FILE_MB,
        f"a Spark task writes one file per partition for all its shards, rolled at this size; maintenance "
        f"compacts to it (default {defaults.TARGET_FILE_MB})",
        bound=TARGET_FILE_MB,
    )
    decode: str = _option("raw", "raw (a data column of bytes) or a format", choices=DECODERS, group="decoding")
    schema: str = _option(
        "",
        "json: a JSON Schema file (default: inferred, or the table's own); avro: an Avro schema file; protobuf: "
        "a descriptor set (protoc --descriptor_set_out); any: glue://REGISTRY/SCHEMA for records in the Glue "
        "Schema Registry's format",
        group="decoding",
    )
    message: str = _option("", "protobuf: the message name in the descriptor set", group="decoding")
    decompress: str = _option("auto", "auto (gzip when it is), gzip, none", choices=DECOMPRESSION, group="decoding")
    transform: str = _option("", "module:function over each page of rows, or cloudwatch-logs", group="decoding")
    dead_letter_output: str = _option(
        "", "where records that do not decode go (default: OUTPUT_dead_letter, same format)", group="decoding"
    )
    on_bad_record: str = _option(
        "dead-letter", "dead-letter (default) or fail the run", choices=ON_BAD_RECORD, group="decoding"
    )
    schema_evolution: str = _option(
        "add-columns",
        "add-columns (default): a new field is a new column; fail: a record with one is a dead letter",
        choices=SCHEMA_EVOLUTION,
        group="decoding",
    )
    changes: str = _option(
        "",
        "apply the records as changes to a table of current state, one row per key: upsert (any decoded "
        "stream, with --key), dynamodb, dms or debezium (their own envelopes); default: append every record",
        group="changes",
    )
    key: str = _option(
        "",
        "--changes: the key column(s), COL[,COL] (dynamodb: its records' Keys); routed: ROUTE:COL[,COL] names one "
        "table's, again for each (the others take the bare one)",
        group="changes",
        repeat=KEY_SEPARATOR,
    )
    sequence_by: str = _option(
        "",
        "--changes upsert: the field (a whole number or a time) that orders a key's changes (default: Kinesis "
        "order: lineage depth, then sequence number)",
        group="changes",
    )
    delete_when: str = _option(
        "", "--changes upsert: FIELD=VALUE marks the changes that delete (deleted=true, op=d)", group="changes"
    )
    tombstone_hours: float = _option(
        TOMBSTONE_HOURS,
        "--changes: how long a delete keeps older changes of its key out (maintain expires them after)",
        bound=POSITIVE,
        group="changes",
    )
    route_by: str = _option(
        "",
        "one table per kind of record: the field (a dotted path, after --transform) whose value names the "
        "record's table, which --output names with {route} (s3://lake/app/{route}, analytics.{route})",
        group="routing",
    )
    routes: str = _option("", "--route-by: the only values taken, a,b,c (others are dead letters)", group="routing")
    max_new_tables: int = _option(
        DEFAULT_MAX_NEW,
        f"--route-by: the new tables a run may make (default {DEFAULT_MAX_NEW}); records of more new values are "
        "dead letters",
        bound=NOT_NEGATIVE,
        group="routing",
    )
    lag_threshold_seconds: float = _option(
        defaults.LAG_THRESHOLD_SECONDS,
        "the end-of-run check fails when an unfinished shard is further behind than this",
        bound=POSITIVE,
        where=ORCHESTRATED,
    )
    dead_letter_threshold: float = _option(
        defaults.DEAD_LETTER_THRESHOLD,
        "the end-of-run check fails when more than this share of the last batch's records are dead letters",
        bound=Bound(0, 1),
        where=ORCHESTRATED,
    )
    metrics: str = _option(
        NONE, "where each run's metrics go: none (default), " + METRICS_HELP, choices=BACKENDS, group="metrics"
    )
    metrics_level: str = _option(SUMMARY, "summary (default: per stream) or detailed (per shard too)", group="metrics")
    metrics_namespace: str = _option(
        NAMESPACE, f"cloudwatch, emf: the namespace (default {NAMESPACE})", group="metrics"
    )
    pushgateway: str = _option("", "prometheus: the Pushgateway's URL (http://HOST:9091)", group="metrics")

    def __post_init__(self) -> None:
        for option in fields(self):
            coerce(self, option)  # its type and bounds
        if self.stream.startswith("arn:"):  # named by its ARN: the name, and the ARN every call passes
            if self.stream_arn and self.stream_arn != self.stream:
                raise IllegalArgumentError(f"--stream-arn {self.stream_arn} differs from --stream {self.stream}")
            object.__setattr__(self, "stream_arn", self.stream)
            object.__setattr__(self, "stream", stream_of_arn(self.stream, setting="--stream"))
        validate_stream_name(self.stream)
        if self.stream_arn and stream_of_arn(self.stream_arn) != self.stream:
            raise IllegalArgumentError(f"--stream-arn {self.stream_arn} names another stream than {self.stream}")
        if self.role_arn:
            validate_role_arn(self.role_arn)
        if self.external_id and not self.role_arn:
            raise IllegalArgumentError("--external-id goes with --role-arn")
        if not self.output:
            raise IllegalArgumentError("--output: an output root is needed")
        if self.table:
            validate_table_name(self.table)
        parse_initial_position(self.initial_position)
        ReadLimits.parse(self.read_limits)
        if self.partition_by:
            PartitionBy.parse(self.partition_by)
        if self.changes:
            format_of(self.format).check_merges(self.changes)
        check_changes(self.change_settings, self.decode, self.transform)
        check_routing(self.output, self.route_rule, self.decode, self.change_settings, self.dead_letter_output)
        _ = self.metrics_settings  # made once here: checked
        if self.spark_remote:
            parse_connect_url(self.spark_remote)
        if self.emr_serverless is not None and self.spark_remote:
            raise IllegalArgumentError("--spark-remote and emr_serverless both say where the read runs: choose one")
        if self.emr_serverless is not None and self.spark_master != defaults.SPARK_MASTER:
            raise IllegalArgumentError("--spark-master and emr_serverless both say where the read runs: choose one")
        if self.routes and not self.route_by:
            raise IllegalArgumentError("--routes goes with --route-by")
        _ = self.dead_letter_destination  # the output and its dead letters: checked
        if self.dead_letter_output and self.dead_letter_output == self.output:
            raise IllegalArgumentError("--dead-letter-output must differ from --output")

    @property
    def route_rule(self) -> RouteRule | None:
        """Which table each record goes to (None: all to --output)."""
        return RouteRule.of(self.route_by, self.routes, self.max_new_tables) if self.route_by else None

    @property
    def metrics_settings(self) -> MetricsSettings:
        """Where the runs' metrics go (kinesis_batch.metrics)."""
        return MetricsSettings(self.metrics, self.metrics_level, self.metrics_namespace, self.pushgateway)

    @property
    def change_settings(self) -> ChangeSettings | None:
        """How the records are applied (None: appended)."""
        return ChangeSettings.parse(self.changes, self.key, self.sequence_by, self.delete_when, self.tombstone_hours)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> StreamSettings:
        """From a streams-file entry, DAG params, Dagster config or JSON: the settings by field
        name (None: not set); other names are refused."""
        unknown = sorted(set(values) - set(NAMES))
        if unknown:
            raise not_a_setting(unknown[0], NAMES)
        return cls(**{name: value for name, value in values.items() if value is not None})

    def to_json(self) -> dict[str, Any]:
        body = asdict(self)
        body["emr_serverless"] = self.emr_serverless.to_json() if self.emr_serverless else None
        return body

    @property
    def stream_id(self) -> str:
        """What Kinesis calls name the stream by: its ARN when given, else its name."""
        return self.stream_arn or self.stream

    @property
    def lease_table(self) -> str:
        return self.table or default_table(self.stream)

    @property
    def destination(self) -> Output:
        """The output the stream's runs publish to."""
        return Output(self.format, self.output, self.catalog or None)

    @property
    def decoding(self) -> DecodeSettings:
        """The decoding; a source's changes (dynamodb, dms, debezium) are JSON records."""
        chosen = {name: getattr(self, name) or None for name in DECODING}
        if self.changes in ENVELOPES:
            chosen["decode"] = "json"
        return DecodeSettings.from_json(chosen)

    @property
    def dead_letter_destination(self) -> Output:
        """Where a decoding stream's dead letters go: ``dead_letter_output``, else beside the output."""
        return self.destination.dead_letter(self.decoding.dead_letter_output)

    def dead_letters_at(self) -> str:
        """Where a decoding stream's dead letters go ("" for raw rows, which have none)."""
        return self.dead_letter_destination.output if self.decoding.decoding else ""


#: The settings as adapters offer them, in the order they show them.
OPTIONS: tuple[Field[Any], ...] = tuple(fields(StreamSettings))
NAMES = tuple(option.name for option in OPTIONS)
DECODING = tuple(option.name for option in fields(DecodeSettings))


def offered(where: str) -> list[Field[Any]]:
    """The options ``where`` (CLI, AIRFLOW, DAGSTER) offers."""
    return [option for option in OPTIONS if where in option.metadata["where"]]


def as_field_message(message: str, options: Sequence[Field[Any]] = OPTIONS) -> str:
    """A check's message with the option named as a field (``lease_seconds: ...``), for adapters
    that name settings that way (a streams file, DAG params); ``options``: whose (the stream
    settings', or the maintenance settings')."""
    for option in sorted(options, key=lambda option: -len(option.name)):  # --schema-evolution before --schema
        rest = message.removeprefix(flag(option))
        if rest != message and rest[:1] in (":", " "):  # the flag whole: "--spark-remote and ...", not "--schema-…"
            return f"{option.name}{rest}"
    return message


__all__ = [
    "AIRFLOW",
    "CLI",
    "DAGSTER",
    "NAMES",
    "OPTIONS",
    "StreamSettings",
    "as_field_message",
    "flag",
    "kind",
    "offered",
]
