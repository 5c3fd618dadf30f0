"""Send a run's metrics to the backend its settings name, never failing the run: a backend that
cannot be reached, or refuses them, is one warning line (logged, so it shows whoever runs it:
the command line's stderr, an Airflow task's log, Dagster's) and the run's data and
checkpoints are untouched."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kinesis_batch.control.waiting import Waited
from kinesis_batch.cost import ReadCost
from kinesis_batch.errors import first_line
from kinesis_batch.metrics.backend import Backend
from kinesis_batch.metrics.points import points_of
from kinesis_batch.metrics.settings import CLOUDWATCH, EMF, PROMETHEUS, STATSD, MetricsSettings
from kinesis_batch.storage.records import ShardCommit

log = logging.getLogger(__name__)


def backend_for(settings: MetricsSettings, cloudwatch: Callable[[], Any]) -> Backend:
    """The backend ``settings`` name (``cloudwatch``: makes the boto3 client it sends with)."""
    if settings.backend == CLOUDWATCH:
        from kinesis_batch.metrics.cloudwatch import CloudWatchBackend

        return CloudWatchBackend(cloudwatch(), settings.namespace)
    if settings.backend == EMF:
        from kinesis_batch.metrics.emf import EmfBackend

        return EmfBackend(settings.namespace)
    if settings.backend == STATSD:
        from kinesis_batch.metrics.statsd import StatsdBackend

        return StatsdBackend()
    if settings.backend == PROMETHEUS:
        from kinesis_batch.metrics.prometheus import PrometheusBackend

        return PrometheusBackend(settings.pushgateway)
    raise ValueError(f"no metrics backend {settings.backend!r}")


def send_metrics(
    settings: MetricsSettings,
    stream: str,
    shards: Sequence[ShardCommit],
    timings: Mapping[str, float],
    *,
    cloudwatch: Callable[[], Any],
    cost: ReadCost | None = None,
    waited: Waited | None = None,
) -> bool:
    """Send a run's metrics (its shards' commits, steps' timings, the read's ``cost`` and what its
    control-plane calls ``waited``); False,
    after one warning line, when they could not be sent. Nothing with ``--metrics none``."""
    if not settings.enabled:
        return True
    try:
        backend_for(settings, cloudwatch).send(points_of(stream, shards, timings, settings.level, cost, waited))
    except Exception as exc:  # whatever the backend's library raises: a run never fails for its metrics
        line = first_line(exc)
        log.warning("metrics: %s did not take this run's metrics (%s); the run is unaffected", settings.backend, line)
        return False
    return True


__all__ = ["backend_for", "send_metrics"]
