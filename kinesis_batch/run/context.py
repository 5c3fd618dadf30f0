"""What every step of one run works with: its settings, the clients and stores built from them,
the lease manager, the run's id, and what the run learns as it goes (timings, the read in
progress). Built in one place; the steps (the other modules of this package) take it.

A step may run in a process of its own (an Airflow task): it then builds a context of its own
for the same run id and worker id, and finds the run's state in the lease table and the
batch's staging, never in this object.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from kinesis_batch.aws import S3Settings, as_role, cloudwatch_client, emr_serverless_client, glue_client, s3_settings
from kinesis_batch.aws import sts_endpoint as resolved_sts  # the parameter has its name
from kinesis_batch.checkpoints.history import history_table_name
from kinesis_batch.checkpoints.store import DynamoDBCheckpointStore
from kinesis_batch.config import RunConfig
from kinesis_batch.control.waiting import TALLY, Waited, met_since, total
from kinesis_batch.decoding.resolve import resolve
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.errors import NOTHING_PUBLISHED, InvalidStateError, LeaseLostError
from kinesis_batch.events import Event, emit
from kinesis_batch.leases.lost import lost_line
from kinesis_batch.leases.manager import LeaseManager
from kinesis_batch.leases.store import LeaseStore
from kinesis_batch.openlineage.origin import Origin
from kinesis_batch.output.composite import RunSink
from kinesis_batch.planning import RunPlan, plan_from_json
from kinesis_batch.run.observe import Observer
from kinesis_batch.shards.listing import StreamDescription, describe_stream
from kinesis_batch.spark.place import ReadPlace
from kinesis_batch.stopping import StopRequest

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient

    from kinesis_batch.ownership import Claim
    from kinesis_batch.serverless.gathering import JobRunGathering
    from kinesis_batch.serverless.job import JobRunInfo
    from kinesis_batch.spark.engine import Engine

Progress = Callable[[str], None]


class Cancellable(Protocol):
    def cancel(self) -> None:
        """Stop at once, from any thread (the lease renewer's); the work then raises."""


def new_run_id() -> str:
    return f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:8]}"


class Timings:
    """Where a run's time went, by step (seconds, summed over repeats)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - started

    def rounded(self) -> dict[str, float]:
        return {name: round(seconds, 3) for name, seconds in self.seconds.items()}


class RunContext:
    def __init__(
        self,
        config: RunConfig,
        *,
        kinesis: KinesisClient,
        dynamodb: DynamoDBClient,
        spark: Callable[[], Engine],
        progress: Progress = lambda message: None,
        clock: Callable[[], float] = time.time,
        run_id: str | None = None,
        s3: S3Settings | None = None,
        glue: Callable[[], Any] | None = None,
        stop: StopRequest | None = None,
        cloudwatch: Callable[[], Any] | None = None,
        emr_serverless: Callable[[], Any] | None = None,
        origin: Origin | None = None,
        place: ReadPlace | None = None,
        sts_endpoint: str | None = None,
        gathering: JobRunGathering | None = None,
    ) -> None:
        """``spark`` gives the Spark session the read uses (started on first use, shared by the
        caller's runs); ``s3``: how the output (the one ``config`` names, with its dead-letter
        output when decoding) is reached on S3, by default as the standard AWS environment says;
        ``glue``: makes the Glue client a ``glue://`` schema is read with;
        ``stop``: asks the run to stop at its next safe point (kinesis_batch.stopping), as the
        adapters' signal handlers and Airflow's ``on_kill`` do; ``cloudwatch``: makes the
        CloudWatch client ``--metrics cloudwatch`` sends with; ``emr_serverless``: makes the
        EMR Serverless client a read step run as a job run is started with; ``origin``: who
        drives the run, as its OpenLineage events say (its parent run, its source; None: the
        standard ``OPENLINEAGE_PARENT_*`` variables say, kinesis_batch.openlineage.origin); ``place``:
        where the read step runs, as the adapter decided it (kinesis_batch.spark.place; default:
        as ``config`` says, with no cluster to submit to); ``sts_endpoint``: where a stream's role
        is assumed, here and in the read's tasks (default: as the AWS environment resolves STS);
        ``gathering``: a group's, whose one job run reads this run's batch beside the others'
        (kinesis_batch.serverless.gathering; None: a job run of its own)."""
        self.config = config
        # What the control plane's calls of this run's stream and tables met from here on.
        self._control_plane_since = TALLY.snapshot()
        # A stream of another account is read with its role; everything else stays this account's.
        role, external_id = config.settings.role_arn, config.settings.external_id
        #: Where the role is assumed (None: no role), here and in the read's tasks.
        self.sts_endpoint = resolved_sts(kinesis.meta.region_name, sts_endpoint) if role else None
        self.kinesis = as_role(kinesis, role, external_id, sts_endpoint_url=self.sts_endpoint) if role else kinesis
        self.spark = spark
        self.place = place or ReadPlace.of(config)
        self.progress = progress
        self.clock = clock
        self.glue = glue or glue_client
        self.cloudwatch = cloudwatch or cloudwatch_client
        self.emr_serverless = emr_serverless or emr_serverless_client
        self.gathering = gathering
        self.store = LeaseStore(dynamodb, config.table)
        self.checkpoints = DynamoDBCheckpointStore(self.store, initial=config.initial_position)
        s3 = s3 or s3_settings()
        #: Where batches are published: the run's tables by route and its dead-letter output, as
        #: one (kinesis_batch.output.composite; the read step reaches the tables through it).
        self.output: RunSink = config.open_sink(s3)
        self.manager = LeaseManager(self.store, config.worker_id, config.lease_seconds, clock=clock)
        self.run_id = run_id or new_run_id()  # also the batch id
        self.timings = Timings()
        self.stop = stop or StopRequest()
        self.current_read: Cancellable | None = None  # for the lease renewer (and a stop) to cancel
        self.tasks = 0  # the read's Spark tasks
        self.failed_task_attempts: int | None = 0  # and their retried attempts (None: not known, Spark Connect)
        #: Task seconds the read held, each task counted for its Spark job's time (splits a group's job run's bill).
        self.task_seconds = 0.0
        self.job_run: JobRunInfo | None = None  # the read's EMR Serverless job run, once it ended
        # The table's claim once it was checked and marked in this process (by the start, or by a
        # backfill's seed before it): the start and the teardown do not check it again.
        self.claim: Claim | None = None
        self._described: StreamDescription | None = None
        #: What the run tells the outside (OpenLineage, metrics), sent by its steps.
        self.observer = Observer(
            config, self.run_id, arn=lambda: self.described().arn, cloudwatch=self.cloudwatch, origin=origin
        )

    def control_plane_met(self) -> dict[str, Waited]:
        """What this run's control-plane calls (its stream's, its lease and history tables')
        met so far, by operation: throttles, dropped or failed calls, seconds waited."""
        resources = frozenset({self.config.stream_id, self.config.table, history_table_name(self.config.table)})
        return met_since(self._control_plane_since, TALLY.snapshot(), resources)

    def control_plane_waited(self) -> Waited:
        """:meth:`control_plane_met`, all operations together."""
        return total(self.control_plane_met().values())

    def described(self) -> StreamDescription:
        """The stream as DescribeStreamSummary says, asked once per run and process (the claim's,
        when the start checked it here): a control-plane call limited per account (20 a second),
        which a run that asked it per need would spend several times at the top of the hour."""
        if self._described is None:
            self._described = (
                self.claim.stream if self.claim is not None else describe_stream(self.kinesis, self.config.stream_id)
            )
        return self._described

    def emit(self, step: str) -> None:
        emit(Event(step, self.run_id, stream=self.config.stream))

    def lost(self, keys: Collection[str], when: str) -> LeaseLostError:
        """The error of a run that lost ``keys``: one line naming them and who has them now."""
        line = lost_line(self.store, self.checkpoints.history, keys, worker_id=self.config.worker_id, when=when)
        return LeaseLostError(line)

    def still_ours(self, when: str) -> None:
        """Raise LeaseLostError unless every held lease is still this worker's in the table.
        Read-only: the process that renews the leases may be another one."""
        gone = self.manager.lost_leases() | self.manager.taken_over()
        if gone:
            raise self.lost(gone, when)

    def decoding(self) -> DecodeSpec | None:
        """What the run's start resolved of its decoding settings (kinesis_batch.decoding.resolve):
        read and checked there, before any lease was taken; None for raw rows."""
        if not self.config.decoding.decoding:
            return None
        body = self.output.read_manifest(self.run_id) or {}
        if "decode" in body:
            return DecodeSpec.from_json(body["decode"])
        return resolve(self.config.decoding, self.glue, self.config.changes, self.config.routing)

    def fields_of(self, route: str) -> pa.Schema | None:
        """The fields of a route's table as they are now (one table: its one route's, SINGLE)."""
        return self.output.table(route).fields()

    def manifest(self, when: str) -> RunPlan:
        """The run's plan as its start step wrote it. Gone while this worker holds none of its
        leases: another worker settled the batch after they lapsed (LeaseLostError)."""
        body = self.output.read_manifest(self.run_id)
        if body is not None:
            return plan_from_json(body)
        if self.manager.held():
            self.still_ours(when)
        elif lost := self.manager.lost_leases():
            # The renewer found them lost first (a thawed run): name them, as every lost run does.
            raise self.lost(lost, when)
        else:
            raise LeaseLostError(
                f"run {self.run_id} holds none of its leases and its plan is gone from {self.output.uri}: another "
                f"worker took its shards and settled its batch {when}; {NOTHING_PUBLISHED}"
            )
        raise InvalidStateError(f"run {self.run_id} has no plan in {self.output.uri}: its staging was removed")


__all__ = ["Cancellable", "Progress", "RunContext", "Timings", "new_run_id"]
