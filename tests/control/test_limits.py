"""The control plane's documented limits: one table, each with its source, and the limits proxy
models the same figures."""

from __future__ import annotations

from devkit.limits_proxy import ControlLimits

from kinesis_batch.control.limits import ACCOUNT, LIMITS, STREAM, rate_of


def test_every_limit_has_a_positive_rate_a_scope_and_a_source() -> None:
    for rate in LIMITS.values():
        assert rate.per_second > 0 and rate.scope in (ACCOUNT, STREAM) and rate.source.startswith("https://")


def test_describe_stream_summary_is_twenty_a_second_per_account_and_dynamodb_states_no_rate() -> None:
    summary, shards = rate_of("DescribeStreamSummary"), rate_of("ListShards")
    assert summary is not None and (summary.per_second, summary.scope) == (20, ACCOUNT)
    assert shards is not None and shards.scope == STREAM
    assert rate_of("DescribeTable") is None and rate_of("CreateTable") is None


def test_the_limits_proxy_holds_calls_to_the_same_figures() -> None:
    modelled = ControlLimits()
    for operation, rate in LIMITS.items():
        held = modelled.of(operation)
        assert held is not None and (held.per_second, held.scope) == (rate.per_second, rate.scope)
