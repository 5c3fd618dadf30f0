"""Fixtures of the whole-run scenarios."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from devkit.limits_proxy import ControlLimits, LimitsProxy
from devkit.stack import LocalStack


@pytest.fixture
def proxies(stack: LocalStack, emulator: str) -> Iterator[tuple[LimitsProxy, LimitsProxy]]:
    """The limits proxy in front of the test's Kinesis emulator (AWS's limits) and one in front of
    DynamoDB (no limits of its own): each counts, records, drops or gathers what a test asks."""
    with (
        LimitsProxy(stack.kinesis[emulator].url) as kinesis,
        LimitsProxy(stack.dynamodb.url, control=ControlLimits.none()) as dynamodb,
    ):
        yield kinesis, dynamodb
