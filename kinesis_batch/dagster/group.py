"""A group's Dagster job, ``kinesis_batch_group_<group>_catch_up``: one per ``[[groups]]`` table
of the streams file (kinesis_batch.dagster.defs.definitions_from_file), on the group's schedule.

- Its one op runs every stream of the group side by side in its step's process
  (kinesis_batch.run.group), on one Spark session, each stream's run the one its own asset's
  materialization makes (its settings, its leases, output, publish and commit). The streams whose
  reads are EMR Serverless job runs (the ``kinesis_batch_spark`` resource's application, else a
  stream's ``emr_serverless``) share one job run per application (kinesis_batch.serverless.gathering).
- Each stream stays its own asset, ``kinesis_batch/<stream>``: the op reports a materialization
  of it for each stream that ran, with the metadata its own materialization carries, and an
  observation of each stream that failed, with its one line (``error``, ``exit_code``), on that
  asset's page.
- The op then fails when a stream failed, naming each with its line: the others' materializations
  stand, and their checkpoints moved.

No ``from __future__ import annotations``, as in the rest of the adapter: Dagster reads the op's
annotations at runtime.
"""

import re
from collections.abc import Mapping
from typing import Any

import dagster as dg

from kinesis_batch import defaults
from kinesis_batch.dagster.config import CatchUpConfig
from kinesis_batch.dagster.metadata import materialization
from kinesis_batch.dagster.resources import AwsClients, SparkResource
from kinesis_batch.dagster.runs import CATCH_UP, Consumer, catch_up_run, failing_for_good, for_stream, run_ids
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.parsers import parse_time
from kinesis_batch.run.group import SharedEngines, StreamRun, in_a_group, local_share, run_group
from kinesis_batch.serverless.gathering import JobRunGathering
from kinesis_batch.stopping import StopRequest, say_on_stderr, stopping_on_signals
from kinesis_batch.streams_file import StreamGroup


def group_prefix(group: str) -> str:
    return "kinesis_batch_group_" + re.sub(r"[^A-Za-z0-9_]", "_", group)


def group_defs(group: StreamGroup, consumers: Mapping[str, Consumer]) -> dg.Definitions:
    """The group's job and schedule (``consumers``: the streams file's, by stream; every stream
    of the group must be one: Dagster loads a code location whole or not at all)."""
    missing = [stream for stream in group.streams if stream not in consumers]
    if missing:
        raise IllegalArgumentError(f"group {group.name!r}: {missing[0]!r} has no [[streams]] entry")
    for stream in group.streams:
        try:
            in_a_group(consumers[stream].settings)
        except IllegalArgumentError as exc:
            raise IllegalArgumentError(f"group {group.name!r}: {stream}: {exc}") from exc
    prefix = group_prefix(group.name)
    keys = {stream: dg.AssetKey(["kinesis_batch", stream]) for stream in group.streams}

    @dg.op(name=f"{prefix}_run", description=f"Catch up the streams of group {group.name} in one run")
    def run(
        context: dg.OpExecutionContext,
        config: CatchUpConfig,
        kinesis_batch_aws: AwsClients,
        kinesis_batch_spark: SparkResource,
    ) -> None:
        if kinesis_batch_spark.submit:
            raise dg.Failure(
                description="a group reads in its step's own Spark session or in EMR Serverless job runs: a resource "
                "that submits to a cluster is a stream's alone",
                allow_retries=False,
            )
        ids = run_ids(context.instance, context.run, CATCH_UP)
        with failing_for_good():
            until = parse_time(config.read_bound, setting="read_bound") if config.read_bound else None
        stop, engines, metadata = StopRequest(), SharedEngines(), dict[str, dict[str, Any]]()
        every = kinesis_batch_spark.job_run() is not None  # the resource's application: every stream's reads
        settings = [consumers[stream].settings for stream in group.streams]
        job_runs = [one.stream for one in settings if every or one.emr_serverless is not None]
        gathering = JobRunGathering(group.name, job_runs, progress=context.log.info)
        share = local_share(defaults.STREAMS_AT_ONCE, group.streams, gathering)

        def run_of(stream: str) -> StreamRun:
            def caught_up() -> Any:
                consumer = consumers[stream]
                one = catch_up_run(
                    consumer, kinesis_batch_aws, for_stream(ids, stream), spark=kinesis_batch_spark, until=until,
                    allow_gaps=config.allow_gaps, log=context.log, slot_share=share, engines=engines.of,
                    gathering=gathering,
                )  # fmt: skip
                one.stop = stop
                report = one.run()
                metadata[stream] = materialization(report, consumer.output, one.output.table_sink().fields())
                return report

            return caught_up

        # Dagster stops a run with SIGINT to its process: every stream's run stops cleanly.
        with stopping_on_signals(stop, timeout=defaults.STOP_TIMEOUT_SECONDS, say=say_on_stderr):
            runs = {s: run_of(s) for s in group.streams}
            report = run_group(group.name, runs, at_once=defaults.STREAMS_AT_ONCE, stop=stop, gathering=gathering)
        for outcome in report.outcomes:
            if outcome.report is not None:
                context.log_event(
                    dg.AssetMaterialization(asset_key=keys[outcome.stream], metadata=metadata[outcome.stream])
                )
            else:
                failed = {
                    "error": dg.MetadataValue.text(str(outcome.error)),
                    "exit_code": dg.MetadataValue.int(outcome.exit_code),
                }
                context.log_event(dg.AssetObservation(asset_key=keys[outcome.stream], metadata=failed))
        context.log.info(report.summary())
        if report.failed:
            lines = "; ".join(f"{outcome.stream}: {outcome.error}" for outcome in report.failed)
            raise dg.Failure(description=f"{report.summary()}: {lines}", allow_retries=False)

    @dg.job(name=f"{prefix}_catch_up", tags={"kinesis_batch/group": group.name}, description=run.description)
    def job() -> None:
        run()

    @dg.schedule(name=f"{prefix}_schedule", cron_schedule=group.schedule, job=job, execution_timezone="UTC")
    def schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        bound = context.scheduled_execution_time.isoformat()
        return dg.RunRequest(run_key=bound, run_config=dg.RunConfig(ops={run.name: CatchUpConfig(read_bound=bound)}))

    return dg.Definitions(jobs=[job], schedules=[schedule])


__all__ = ["group_defs", "group_prefix"]
