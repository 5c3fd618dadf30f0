"""A run's OpenLineage events sent where OpenLineage is configured the standard way
(``OPENLINEAGE_URL``, ``OPENLINEAGE_CONFIG``, or the client's ``OPENLINEAGE__TRANSPORT__*``
variables), with the openlineage-python client (the ``openlineage`` extra). Nothing is sent,
and nothing imported, unless it is configured. A backend that cannot be reached is one warning
line for the run, never an error: the run's output and checkpoints are the same with or without
lineage."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kinesis_batch.config import RunConfig
from kinesis_batch.errors import LeaseError, first_line
from kinesis_batch.openlineage.naming import RUN_JOB, output_dataset, stream_dataset
from kinesis_batch.openlineage.origin import ALONE, Origin
from kinesis_batch.routing.routes import SINGLE
from kinesis_batch.storage.records import ShardCommit

if TYPE_CHECKING:
    import pyarrow as pa

#: A route's table's fields as the run sees them (a run without ``--route-by``: its one route's).
Fields = Callable[[str], "pa.Schema | None"]

log = logging.getLogger(__name__)


def configured(environ: dict[str, str] | None = None) -> bool:
    """OpenLineage is configured in the environment (and not disabled)."""
    env = os.environ if environ is None else environ
    if env.get("OPENLINEAGE_DISABLED", "").lower() in ("1", "true"):
        return False
    return bool(env.get("OPENLINEAGE_URL") or env.get("OPENLINEAGE_CONFIG")) or any(
        name.startswith("OPENLINEAGE__TRANSPORT__") for name in env
    )


class Sender:
    """The OpenLineage client of one run: after a failure it warns once and sends no more."""

    def __init__(self, client: Any) -> None:
        self.client = client

    @classmethod
    def make(cls) -> Sender | None:
        """None unless OpenLineage is configured, or (one warning) when its client cannot be made."""
        if not configured():
            return None
        try:
            from openlineage.client import OpenLineageClient

            return cls(OpenLineageClient())
        except Exception as exc:  # no extra installed, a config that does not parse
            warn(exc)
            return None

    def send(self, make: Callable[[], Any]) -> None:
        """Send the event ``make`` makes (not even made after a failure)."""
        if self.client is None:  # it failed before in this run: one warning is enough
            return
        try:
            self.client.emit(make())
        except Exception as exc:  # whatever the transport (or a table read for columns) raises: never an error
            warn(exc)
            self.client = None


class Lineage:
    """One OpenLineage run of ``job`` (``run``: its UUID) reading ``inputs`` ((namespace, name)
    each), driven from ``origin`` (its parent run, its source): :meth:`start`, then its own
    COMPLETE, or :meth:`failed`."""

    #: The errors that end it as ABORT rather than FAIL.
    aborts: tuple[type[BaseException], ...] = ()
    #: The job facet's job type (kinesis_batch.openlineage.events).
    job_type = RUN_JOB

    def __init__(
        self, sender: Sender, job: str, run: str, inputs: list[tuple[str, str]], origin: Origin = ALONE
    ) -> None:
        self.sender, self.job, self.run, self.inputs, self.origin = sender, job, run, inputs, origin

    def start(self) -> None:
        from openlineage.client.event_v2 import RunState

        self._send(RunState.START)

    def failed(self, error: BaseException) -> None:
        """FAIL (or ABORT, for :attr:`aborts`) with the error's one line."""
        from openlineage.client.event_v2 import RunState

        from kinesis_batch.openlineage.events import error_facet

        state = RunState.ABORT if isinstance(error, self.aborts) else RunState.FAIL
        self._send(state, facets={"errorMessage": error_facet(first_line(error))})

    def _send(
        self,
        state: Any,
        written: Callable[[], list[Any]] | None = None,
        facets: dict[str, Any] | None = None,
        shards: tuple[ShardCommit, ...] | None = None,
    ) -> None:
        """The event, made only when sent (``written``: its outputs, read then; ``shards``: what
        was read of each input, once known)."""
        from kinesis_batch.openlineage.events import Read, event

        def made() -> Any:
            outputs = written() if written is not None else []
            inputs = [Read(namespace, name, shards) for namespace, name in self.inputs]
            return event(
                state,
                job=self.job,
                run=self.run,
                inputs=inputs,
                written=outputs,
                facets=facets,
                job_type=self.job_type,
                origin=self.origin,
            )

        self.sender.send(made)


class RunLineage(Lineage):
    """A catch-up run's events: ABORT when a lost lease or a stop ended it. ``stream``: the
    input's (namespace, name)."""

    aborts = (LeaseError,)

    def __init__(
        self, sender: Sender, config: RunConfig, run_id: str, stream: tuple[str, str], origin: Origin = ALONE
    ) -> None:
        from kinesis_batch.openlineage.events import run_uuid

        super().__init__(sender, config.table, run_uuid(config.table, run_id), [stream], origin)
        self.config = config

    @classmethod
    def of(
        cls, config: RunConfig, run_id: str, stream_arn: Callable[[], str], origin: Callable[[], Origin]
    ) -> RunLineage | None:
        """The run's lineage when OpenLineage is configured (None otherwise, or after one
        warning when the client cannot be made, the stream not named or the origin not read)."""
        sender = Sender.make()
        if sender is None:
            return None
        try:
            return cls(sender, config, run_id, stream_dataset(stream_arn()), origin())
        except Exception as exc:  # the stream unknown, its ARN unreadable, a parent that does not parse
            warn(exc)
            return None

    def complete(self, batch_id: str, shards: tuple[ShardCommit, ...], fields: Fields) -> None:
        from openlineage.client.event_v2 import RunState

        from kinesis_batch.openlineage.events import run_facet

        facets = {"kinesisBatch": run_facet(batch_id, shards)}
        self._send(RunState.COMPLETE, lambda: written_by(self.config, shards, fields), facets, shards)


def written_by(config: RunConfig, shards: tuple[ShardCommit, ...], fields: Fields) -> list[Any]:
    """The outputs a run's batch (``shards``' commits) wrote, as Written: each route's table the
    batch wrote (one table: its one route's) with its rows and columns (``fields`` of a route's
    table: kinesis_batch.run.context.RunContext.fields_of), and the dead letters."""
    from kinesis_batch.landing import total
    from kinesis_batch.openlineage.events import Written

    landing = total([s.landing for s in shards])
    destination = config.destination
    written = []
    rows = landing.rows if landing is not None else sum(s.records for s in shards)
    # A template's batch: the tables it wrote rows to; one table's rows are all its one route's.
    by_route = dict(landing.tables) if landing is not None and destination.routed else {SINGLE: rows}
    for route, count in by_route.items():
        written.append(Written(*output_dataset(destination.route(route).asset_uri), count, fields(route)))
    if landing is not None:
        dead = config.settings.dead_letter_destination
        written.append(Written(*output_dataset(dead.asset_uri), landing.dead_letters))
    return written


def warn(exc: BaseException) -> None:
    """The one warning line of a run whose events OpenLineage did not take."""
    log.warning("lineage: OpenLineage did not take this run's events (%s); the run is unaffected", first_line(exc))


__all__ = ["Lineage", "RunLineage", "Sender", "configured", "warn", "written_by"]
