"""One stream's Dagster definitions, and the definitions of every stream of a TOML file.

Per stream (``kinesis_batch_<stream>_...``, the stream's name with other characters as ``_``):

- the stream, an external asset ``kinesis/<stream>``, upstream of the output asset
  ``kinesis_batch/<stream>``: one materialization is one catch-up run, from the checkpoints to
  the run config's ``read_bound`` (:class:`CatchUpConfig`), all steps in the step's process with
  the leases renewed throughout and released in ``finally`` (the read spark-submitted to a
  cluster when the Spark resource says ``submit``);
- its three asset checks (kinesis_batch.dagster.checks), after each materialization and every
  15 minutes on their own (the ``_checks`` job and schedule);
- the ``_catch_up`` job and its hourly schedule: unpartitioned (a consumer is a cursor, not a
  set of windows); the tick's time is the read bound, as Airflow's data interval end is;
- the ``_backfill`` job (:class:`BackfillConfig`);
- the ``_maintain`` job and its daily schedule (kinesis_batch.dagster.maintain);
- a run failure sensor, the backstop for a step killed where ``finally`` never ran: it releases
  that run's leases and clears its pending markers, as the run's own teardown would have.

One run at a time per stream is deployment configuration (runs are tagged
``kinesis_batch/stream``, the steps use the pool ``kinesis_batch/<stream>``; see
deploy/dagster/dagster.yaml). The leases remain the real guard.

No ``from __future__ import annotations``: Dagster reads the asset's and op's parameter
annotations (config, resources) at runtime.
"""

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import dagster as dg

from kinesis_batch import defaults
from kinesis_batch.backfill.seed import seed_backfill
from kinesis_batch.dagster import checks
from kinesis_batch.dagster.config import BackfillConfig, CatchUpConfig
from kinesis_batch.dagster.group import group_defs
from kinesis_batch.dagster.maintain import maintenance_defs
from kinesis_batch.dagster.metadata import materialization
from kinesis_batch.dagster.resources import AwsClients, SparkResource
from kinesis_batch.dagster.runs import (
    BACKFILL,
    CATCH_UP,
    Consumer,
    backfill_run,
    catch_up_run,
    failing_for_good,
    run_all_steps,
    run_ids,
)
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.maintenance.settings import MAINTAIN_OPTIONS, MaintainSettings
from kinesis_batch.parsers import parse_time
from kinesis_batch.settings import DAGSTER, StreamSettings, as_field_message, offered
from kinesis_batch.streams_file import StreamsFile

STREAM_TAG = "kinesis_batch/stream"
AWS = "kinesis_batch_aws"  # the resource keys (and so the parameter names below)
SPARK = "kinesis_batch_spark"
STREAMS_FILE = "KINESIS_BATCH_DAGSTER_STREAMS"
FILE_NAME = "kinesis-batch-streams.toml"
#: The Dagster definitions' own settings of a stream, beside the stream's (kinesis_batch.settings).
OWN = ("cron_schedule", "checks_cron_schedule", "retain_hours", "small_file_mb", "maintain_cron_schedule")
#: What an entry of a streams file may set: build_stream_defs' arguments but the resources.
STREAM_SETTINGS = (*(option.name for option in offered(DAGSTER)), *OWN)
#: An entry's schedules: the definitions', not the consumer's.
SCHEDULES = ("cron_schedule", "checks_cron_schedule", "maintain_cron_schedule")


def consumer_of(
    stream: str,
    *,
    output: str,
    retain_hours: int = defaults.RETAIN_HOURS,
    small_file_mb: float = defaults.SMALL_FILE_MB,
    **settings: Any,
) -> Consumer:
    """The stream's consumer as :func:`build_stream_defs` takes it (``settings``: the stream's by
    name), checked: a bad value is one line naming the field."""
    unknown = sorted(set(settings) - set(STREAM_SETTINGS))
    if unknown:
        raise IllegalArgumentError(f"{unknown[0]}: not a setting (the settings: {', '.join(STREAM_SETTINGS)})")
    try:
        chosen = StreamSettings.from_mapping({"stream": stream, "output": output, **settings})
    except IllegalArgumentError as exc:
        raise IllegalArgumentError(as_field_message(str(exc))) from exc
    try:
        maintenance = MaintainSettings(chosen.target_file_mb, retain_hours, chosen.tombstone_hours)
    except IllegalArgumentError as exc:
        raise IllegalArgumentError(as_field_message(str(exc), MAINTAIN_OPTIONS)) from exc
    return Consumer(chosen, maintenance, small_file_mb)


def build_stream_defs(
    stream: str,
    *,
    output: str,
    cron_schedule: str = defaults.CRON_SCHEDULE,
    checks_cron_schedule: str = defaults.CHECKS_CRON_SCHEDULE,
    aws: AwsClients | None = None,
    spark: SparkResource | None = None,
    retain_hours: int = defaults.RETAIN_HOURS,
    small_file_mb: float = defaults.SMALL_FILE_MB,
    maintain_cron_schedule: str = defaults.MAINTAIN_SCHEDULE,
    **settings: Any,
) -> dg.Definitions:
    """The definitions of one stream's consumer (see the module docstring). ``aws`` and ``spark``
    default to the standard AWS environment and local Spark; definitions of several streams
    merge when they share the same resource objects (as :func:`definitions_from_file` does).
    ``settings``: the stream's other settings by name (kinesis_batch.settings: format, table,
    lag_threshold_seconds, the decoding ones, partition_by, target_file_mb...); the daily
    ``_maintain`` job (kinesis_batch.dagster.maintain) keeps ``retain_hours`` of versions."""
    consumer = consumer_of(stream, output=output, retain_hours=retain_hours, small_file_mb=small_file_mb, **settings)
    stream = consumer.stream  # its name, also when written as its ARN: what its assets and jobs are named by
    prefix = "kinesis_batch_" + re.sub(r"[^A-Za-z0-9_]", "_", stream)
    key = dg.AssetKey(["kinesis_batch", stream])
    source = dg.AssetSpec(
        dg.AssetKey(["kinesis", stream]), description=f"Kinesis data stream {stream}", kinds={"kinesis"}
    )
    pool = f"kinesis_batch/{stream}"
    tags = {STREAM_TAG: stream}

    @dg.asset(
        key=key,
        deps=[source],
        pool=pool,
        kinds={"kinesis", consumer.output.format},
        description=f"{stream} caught up into {consumer.output.asset_uri}: one materialization is one catch-up run",
        metadata={"output": consumer.output.asset_uri, "lease_table": consumer.table},
    )
    def catch_up(
        context: dg.AssetExecutionContext,
        config: CatchUpConfig,
        kinesis_batch_aws: AwsClients,
        kinesis_batch_spark: SparkResource,
    ) -> dg.MaterializeResult[None]:
        ids = run_ids(context.instance, context.run, CATCH_UP)
        with failing_for_good():
            until = parse_time(config.read_bound, setting="read_bound") if config.read_bound else None
        run = catch_up_run(
            consumer,
            kinesis_batch_aws,
            ids,
            spark=kinesis_batch_spark,
            until=until,
            allow_gaps=config.allow_gaps,
            log=context.log,
        )
        report = run_all_steps(run, kinesis_batch_spark, kinesis_batch_aws, context.log)
        return dg.MaterializeResult(metadata=materialization(report, consumer.output, run.output.table_sink().fields()))

    job = dg.define_asset_job(f"{prefix}_catch_up", selection=dg.AssetSelection.assets(key), tags=tags)
    checks_job = dg.define_asset_job(f"{prefix}_checks", selection=dg.AssetSelection.checks_for_assets(key))
    op_name = key.to_python_identifier()

    @dg.schedule(name=f"{prefix}_hourly", cron_schedule=cron_schedule, job=job, execution_timezone="UTC")
    def hourly(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        bound = context.scheduled_execution_time.isoformat()
        return dg.RunRequest(run_key=bound, run_config=dg.RunConfig(ops={op_name: CatchUpConfig(read_bound=bound)}))

    checks_schedule = dg.ScheduleDefinition(
        name=f"{prefix}_checks_every_15_minutes", cron_schedule=checks_cron_schedule, job=checks_job
    )

    @dg.multi_asset_check(specs=checks.check_specs(consumer, key), name=f"{prefix}_status_checks")
    def stream_checks(kinesis_batch_aws: AwsClients) -> Iterator[dg.AssetCheckResult]:
        yield from checks.check_results(consumer, kinesis_batch_aws, key)

    @dg.op(name=f"{prefix}_backfill_step", pool=pool)
    def backfill(
        context: dg.OpExecutionContext,
        config: BackfillConfig,
        kinesis_batch_aws: AwsClients,
        kinesis_batch_spark: SparkResource,
    ) -> dict[str, Any]:
        ids = run_ids(context.instance, context.run, BACKFILL)
        run, plan = backfill_run(consumer, kinesis_batch_aws, ids, config, spark=kinesis_batch_spark, log=context.log)
        if not plan.moves_main_checkpoints:
            with failing_for_good():
                starts = seed_backfill(run, plan, start=config.start, shards=config.shards)
            context.log.info(f"backfill {ids.batch_id}: {len(starts)} shards from {config.start} into {plan.output}")
        report = run_all_steps(run, kinesis_batch_spark, kinesis_batch_aws, context.log)
        context.add_output_metadata(materialization(report, run.config.destination, run.output.table_sink().fields()))
        return {"batch_id": report.batch_id, "records": report.records, "output": plan.output, "table": plan.table}

    @dg.job(name=f"{prefix}_backfill", tags=tags, description=f"Read {stream} again from an older position")
    def backfill_job() -> None:
        backfill()

    @dg.run_failure_sensor(name=f"{prefix}_release_leases", monitored_jobs=[job, backfill_job])
    def release_leases(context: dg.RunFailureSensorContext, kinesis_batch_aws: AwsClients) -> None:
        failed = context.dagster_run
        if failed.job_name == backfill_job.name:
            ops = cast(dict[str, Any], dict(failed.run_config or {}).get("ops") or {})
            config = BackfillConfig(**ops.get(backfill.name, {}).get("config", {}))
            run, _ = backfill_run(consumer, kinesis_batch_aws, run_ids(context.instance, failed, BACKFILL), config)
        else:
            run = catch_up_run(consumer, kinesis_batch_aws, run_ids(context.instance, failed, CATCH_UP))
        released = run.finish()
        context.log.info(f"run {failed.run_id} failed: released {len(released)} leases of {run.config.worker_id}")

    maintain_job, maintain_daily = maintenance_defs(consumer, prefix, cron_schedule=maintain_cron_schedule, tags=tags)
    return dg.Definitions(
        assets=[source, catch_up],
        asset_checks=[stream_checks],
        jobs=[job, checks_job, backfill_job, maintain_job],
        schedules=[hourly, checks_schedule, maintain_daily],
        sensors=[release_leases],
        resources={AWS: aws or AwsClients(), SPARK: spark or SparkResource()},
    )


def definitions_from_file(path: str | Path) -> dg.Definitions:
    """Every stream of a streams file (kinesis_batch.streams_file), sharing one set of resources::

    [aws]                 # optional: AwsClients fields (region_name, endpoint_url, profile_name...)
    region_name = "eu-west-1"

    [spark]               # optional: SparkResource fields
    master = "local[*]"

    [[streams]]           # build_stream_defs' arguments, one table per stream
    stream = "clicks"
    output = "s3://lake/tables/clicks"
    format = "delta"

    A broken entry fails the whole file, in one line naming every broken entry: Dagster loads a
    code location whole or not at all."""
    streams = StreamsFile.read(Path(path))
    aws = AwsClients(**streams.sections.get("aws", {}))
    spark = SparkResource(**streams.sections.get("spark", {}))

    def made(**entry: Any) -> tuple[str, dg.Definitions, Consumer]:  # by stream: its assets' keys name it
        schedules = {name: entry.pop(name) for name in SCHEDULES if name in entry}
        consumer = consumer_of(**entry)
        return consumer.stream, build_stream_defs(**entry, **schedules, aws=aws, spark=spark), consumer

    defs, broken = streams.entries(made, STREAM_SETTINGS, key=lambda made: made[0])
    if broken:
        raise IllegalArgumentError("; ".join(entry.describe(streams.path) for entry in broken))
    consumers = {stream: consumer for stream, _, consumer in defs}
    groups = []
    for table in streams.group_tables:
        group = streams.group(str(table.get("name")))  # a broken group's line names the file
        try:
            groups.append(group_defs(group, consumers))
        except IllegalArgumentError as exc:
            raise IllegalArgumentError(f"{streams.path}: {exc}") from exc
    return dg.Definitions.merge(*(definitions for _, definitions, _ in defs), *groups)


def definitions_from_environment() -> dg.Definitions:
    """The streams file ``KINESIS_BATCH_DAGSTER_STREAMS`` names, else
    ``$DAGSTER_HOME/kinesis-batch-streams.toml`` (as Airflow's is in ``$AIRFLOW_HOME``)."""
    named = os.environ.get(STREAMS_FILE) or ""
    home = os.environ.get("DAGSTER_HOME") or ""
    path = Path(named) if named else Path(home) / FILE_NAME
    if not named and not (home and path.exists()):
        raise IllegalArgumentError(
            f"no streams file: set {STREAMS_FILE} to one, or put one at $DAGSTER_HOME/{FILE_NAME} "
            "(one [[streams]] table per stream, with at least stream and output)"
        )
    return definitions_from_file(path)
