"""AWS's documented control-plane limits of the calls a run makes, with their sources: the one
table the process paces to (kinesis_batch.control.pacing) and the limits proxy models.

A limit counts calls in any second, apart for each ``scope``: the account (in a region), or one
stream. DynamoDB states no rate for its table calls (CreateTable, DescribeTable: "500 table
operations at a time" per account), so they are not paced, only retried.
"""

from __future__ import annotations

from dataclasses import dataclass

ACCOUNT, STREAM = "account", "stream"
KINESIS_QUOTAS = "https://docs.aws.amazon.com/streams/latest/dev/service-sizes-and-limits.html"


@dataclass(frozen=True)
class Rate:
    """At most ``per_second`` calls in any second per ``scope`` (ACCOUNT or STREAM), as ``source`` says."""

    per_second: float
    scope: str
    source: str = KINESIS_QUOTAS


#: The control-plane calls a run makes, by API name.
LIMITS: dict[str, Rate] = {
    "DescribeStreamSummary": Rate(20, ACCOUNT),
    "DescribeStream": Rate(10, ACCOUNT),
    "ListStreams": Rate(5, ACCOUNT),
    "ListShards": Rate(1000, STREAM),
}


def rate_of(operation: str) -> Rate | None:
    """The documented limit of ``operation`` (its API name), or None where AWS states none."""
    return LIMITS.get(operation)


__all__ = ["ACCOUNT", "LIMITS", "STREAM", "Rate", "rate_of"]
