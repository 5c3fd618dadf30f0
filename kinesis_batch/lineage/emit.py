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
from typing import Any

from kinesis_batch.config import RunConfig
from kinesis_batch.errors import LeaseError
from kinesis_batch.lineage.naming import output_dataset, stream_dataset
from kinesis_batch.output.records import ShardCommit
from kinesis_batch.output.routed import RoutedSink
from kinesis_batch.output.sink import Sink

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


class RunLineage:
    """One run's events: :meth:`start`, then :meth:`complete` or :meth:`failed`. ``stream``:
    the input's (namespace, name)."""

    def __init__(self, sender: Sender, config: RunConfig, run_id: str, stream: tuple[str, str]) -> None:
        self.sender, self.config, self.run_id, self.stream = sender, config, run_id, stream

    @classmethod
    def of(cls, config: RunConfig, run_id: str, stream_arn: Callable[[], str]) -> RunLineage | None:
        """The run's lineage when OpenLineage is configured (None otherwise, or after one
        warning when the client cannot be made or the stream not named)."""
        sender = Sender.make()
        if sender is None:
            return None
        try:
            return cls(sender, config, run_id, stream_dataset(stream_arn()))
        except Exception as exc:  # the stream unknown, its ARN unreadable
            warn(exc)
            return None

    def start(self) -> None:
        from openlineage.client.event_v2 import RunState

        self.sender.send(lambda: self._event(RunState.START))

    def complete(self, batch_id: str, shards: tuple[ShardCommit, ...], sink: Sink) -> None:
        from openlineage.client.event_v2 import RunState

        from kinesis_batch.lineage.events import run_facet

        facets = {"kinesisBatch": run_facet(batch_id, shards)}
        self.sender.send(lambda: self._event(RunState.COMPLETE, self._written(shards, sink), facets))

    def failed(self, error: BaseException) -> None:
        """FAIL with the one-line error; ABORT when a lost lease or a stop ended the run."""
        from openlineage.client.event_v2 import RunState

        from kinesis_batch.lineage.events import error_facet

        state = RunState.ABORT if isinstance(error, LeaseError) else RunState.FAIL
        line = str(error).splitlines()[0] if str(error) else type(error).__name__
        self.sender.send(lambda: self._event(state, facets={"errorMessage": error_facet(line)}))

    def _written(self, shards: tuple[ShardCommit, ...], sink: Sink) -> list[Any]:
        from kinesis_batch.landing import total
        from kinesis_batch.lineage.events import Written

        landing = total([s.landing for s in shards])
        destination = self.config.destination
        written = []
        if isinstance(sink, RoutedSink) and landing is not None:
            for route, rows in landing.tables.items():
                where = output_dataset(destination.route(route).asset_uri)
                written.append(Written(*where, rows, sink.table(route).fields()))
        else:
            rows = landing.rows if landing is not None else sum(s.records for s in shards)
            written.append(Written(*output_dataset(destination.asset_uri), rows, sink.table_sink().fields()))
        if landing is not None:
            dead = destination.dead_letter(self.config.decoding.dead_letter_output)
            written.append(Written(*output_dataset(dead.asset_uri), landing.dead_letters))
        return written

    def _event(self, state: Any, written: list[Any] | None = None, facets: dict[str, Any] | None = None) -> Any:
        from kinesis_batch.lineage.events import event, run_uuid

        consumer = self.config.table
        run = run_uuid(consumer, self.run_id)
        return event(state, job=consumer, run=run, inputs=[self.stream], written=written or (), facets=facets)


def warn(exc: BaseException) -> None:
    """The one warning line of a run whose events OpenLineage did not take."""
    line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    log.warning("lineage: OpenLineage did not take this run's events (%s); the run is unaffected", line)


__all__ = ["RunLineage", "Sender", "configured", "warn"]
