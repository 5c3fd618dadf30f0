"""Where a stream's runs send their metrics, checked when made (one line naming the flag)."""

from __future__ import annotations

from dataclasses import dataclass

from kinesis_batch.errors import IllegalArgumentError

NONE, CLOUDWATCH, EMF, STATSD, PROMETHEUS = "none", "cloudwatch", "emf", "statsd", "prometheus"
BACKENDS = (NONE, CLOUDWATCH, EMF, STATSD, PROMETHEUS)
SUMMARY, DETAILED = "summary", "detailed"
LEVELS = (SUMMARY, DETAILED)
NAMESPACE = "KinesisBatch"
HELP = (
    "cloudwatch (PutMetricData), emf (CloudWatch's Embedded Metric Format, a log line), statsd (Airflow's "
    "own inside Airflow, else STATSD_HOST) or prometheus (a Pushgateway: --pushgateway)"
)


@dataclass(frozen=True)
class MetricsSettings:
    """``backend``: one of BACKENDS; ``level``: SUMMARY (per stream) or DETAILED (per shard
    too); ``namespace``: CloudWatch's (cloudwatch, emf); ``pushgateway``: the Pushgateway's URL
    (prometheus)."""

    backend: str = NONE
    level: str = SUMMARY
    namespace: str = NAMESPACE
    pushgateway: str = ""

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise IllegalArgumentError(f"--metrics {self.backend!r}: choose one of {', '.join(BACKENDS)}")
        if self.level not in LEVELS:
            raise IllegalArgumentError(f"--metrics-level {self.level!r}: choose summary or detailed")
        if self.backend == PROMETHEUS and not self.pushgateway:
            raise IllegalArgumentError("--metrics prometheus needs --pushgateway URL (http://HOST:9091)")
        if self.pushgateway and self.backend != PROMETHEUS:
            raise IllegalArgumentError("--pushgateway goes with --metrics prometheus")
        if self.pushgateway and not self.pushgateway.startswith(("http://", "https://")):
            raise IllegalArgumentError(f"--pushgateway {self.pushgateway!r}: an http:// or https:// URL")
        if not self.namespace.strip() or len(self.namespace) > 255:
            raise IllegalArgumentError(f"--metrics-namespace {self.namespace!r}: 1 to 255 characters")

    @property
    def enabled(self) -> bool:
        return self.backend != NONE


__all__ = [
    "BACKENDS",
    "CLOUDWATCH",
    "DETAILED",
    "EMF",
    "HELP",
    "LEVELS",
    "NAMESPACE",
    "NONE",
    "PROMETHEUS",
    "STATSD",
    "SUMMARY",
    "MetricsSettings",
]
