"""Where a stream's runs send their metrics: each mistake one line naming the flag."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.metrics.settings import BACKENDS, NAMESPACE, NONE, PROMETHEUS, SUMMARY, MetricsSettings


def test_no_metrics_by_default() -> None:
    settings = MetricsSettings()
    assert (settings.backend, settings.level, settings.namespace) == (NONE, SUMMARY, NAMESPACE)
    assert not settings.enabled


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b not in (NONE, PROMETHEUS)])
def test_each_backend_but_prometheus_needs_nothing_more(backend: str) -> None:
    assert MetricsSettings(backend, "detailed").enabled


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"backend": "datadog"}, "--metrics 'datadog': choose one of none, cloudwatch, emf, statsd, prometheus"),
        ({"level": "verbose"}, "--metrics-level 'verbose': choose summary or detailed"),
        ({"backend": PROMETHEUS}, "--metrics prometheus needs --pushgateway URL"),
        ({"backend": "emf", "pushgateway": "http://gw:9091"}, "--pushgateway goes with --metrics prometheus"),
        ({"backend": PROMETHEUS, "pushgateway": "gw:9091"}, "--pushgateway 'gw:9091': an http:// or https:// URL"),
        ({"namespace": " "}, "--metrics-namespace ' ': 1 to 255 characters"),
        ({"namespace": "n" * 256}, "--metrics-namespace"),
    ],
)
def test_a_mistake_is_one_line_naming_the_flag(given: dict[str, Any], said: str) -> None:
    with pytest.raises(IllegalArgumentError) as caught:
        MetricsSettings(**given)
    assert str(caught.value).startswith(said) and "\n" not in str(caught.value)


def test_prometheus_with_its_pushgateway() -> None:
    assert MetricsSettings(PROMETHEUS, pushgateway="https://gw.example:9091").enabled
