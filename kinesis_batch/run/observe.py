"""What a run tells the outside, made by its own steps whoever drives them (the command line's
whole run, an Airflow task per step, Dagster): its OpenLineage events and its metrics.

- :meth:`Observer.started`, by the start step as it begins: the run's START;
- :meth:`Observer.failed`, by any step that fails (CatchUpRun.honouring_stop): FAIL with the
  one line, or ABORT for a lost lease or a stop;
- :meth:`Observer.committed`, by the commit step once the checkpoints moved: the metrics
  (``--metrics``: the batch's shards, the steps' timings in this process, the read's bill)
  and the run's COMPLETE, naming what was read and written.

A run ends once: after its COMPLETE, a failure in the same process (a stop that came during the
publish, honoured after the commit) sends no FAIL or ABORT; the batch it committed is what the
run did. Neither ever fails a run, and a backend that does not take them is one warning line
for the process (kinesis_batch.openlineage.emit, kinesis_batch.metrics.send).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from kinesis_batch.config import RunConfig
from kinesis_batch.control.waiting import Waited
from kinesis_batch.metrics.send import send_metrics
from kinesis_batch.openlineage.emit import Fields, RunLineage
from kinesis_batch.openlineage.origin import Origin
from kinesis_batch.storage.records import CommitRecord


class Observer:
    """The observability of run ``run_id`` of ``config`` in this process. ``origin``: who drives
    it, as its driver says (None: the standard ``OPENLINEAGE_PARENT_*`` variables say, read
    when the first event is made); ``arn`` names the stream's ARN (asked when the first event
    is made: the run's one description of its stream), ``cloudwatch`` makes the client
    ``--metrics cloudwatch`` sends with."""

    def __init__(
        self,
        config: RunConfig,
        run_id: str,
        *,
        arn: Callable[[], str],
        cloudwatch: Callable[[], Any],
        origin: Origin | None = None,
    ) -> None:
        self.config, self.run_id, self.arn, self.cloudwatch = config, run_id, arn, cloudwatch
        self.origin = origin
        self.completed = False

    def started(self) -> None:
        if self.lineage is not None:
            self.lineage.start()

    def failed(self, error: BaseException) -> None:
        if self.lineage is not None and not self.completed:
            self.lineage.failed(error)

    def committed(
        self, record: CommitRecord | None, timings: Mapping[str, float], fields: Fields, waited: Waited | None = None
    ) -> None:
        """After the commit of ``record`` (None: nothing was published), with the steps'
        ``timings``, the ``fields`` of the tables written and what the run's control-plane
        calls ``waited``."""
        shards = record.shards if record is not None else ()
        cost = record.cost if record is not None else None
        config = self.config
        send_metrics(
            config.metrics, config.stream, shards, timings, cloudwatch=self.cloudwatch, cost=cost, waited=waited
        )
        if self.lineage is not None:
            self.lineage.complete(self.run_id, shards, fields)
        self.completed = True

    @cached_property
    def lineage(self) -> RunLineage | None:
        """The run's OpenLineage events in this process (one sender: one warning at most)."""

        def origin() -> Origin:
            return self.origin if self.origin is not None else Origin.from_environ(os.environ)

        return RunLineage.of(self.config, self.run_id, self.arn, origin)


__all__ = ["Observer"]
