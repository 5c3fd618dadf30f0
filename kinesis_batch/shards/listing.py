"""List every shard of a stream with paginated ListShards.

Contract: returns each shard once, in the service's order, or raises. Throttling is retried
with bounded backoff; an expired NextToken restarts the listing once; every other client error
ends the listing with a typed error (harlow/kinesis-consumer#131 looped silently instead).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from kinesis_batch._backoff import Backoff
from kinesis_batch.errors import StreamNotFoundError, error_code, from_botocore, is_throttling
from kinesis_batch.shards.model import Shard

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient

PAGE_SIZE = 1000  # the API's maximum MaxResults


def list_shards(
    client: KinesisClient,
    stream_name: str,
    *,
    backoff: Backoff = Backoff(base=0.1, cap=2.0, attempts=8),
    sleep: Callable[[float], None] = time.sleep,
) -> list[Shard]:
    """All shards of ``stream_name`` (open and closed, as far as retention keeps them)."""
    restarted = False
    while True:
        try:
            return _list_once(client, stream_name, backoff, sleep)
        except ClientError as exc:
            # A NextToken lives 300 s; a listing that slow is restarted once, never looped.
            if error_code(exc) == "ExpiredNextTokenException" and not restarted:
                restarted = True
                continue
            if error_code(exc) == "ResourceNotFoundException":
                raise StreamNotFoundError(f"stream {stream_name!r} does not exist") from exc
            raise from_botocore(exc, operation="ListShards", resource=stream_name) from exc
        except BotoCoreError as exc:
            raise from_botocore(exc, operation="ListShards", resource=stream_name) from exc


def _list_once(
    client: KinesisClient, stream_name: str, backoff: Backoff, sleep: Callable[[float], None]
) -> list[Shard]:
    shards: list[Shard] = []
    # The first page is asked by stream name, the next ones by NextToken alone (AWS rejects both).
    request: dict[str, Any] = {"StreamName": stream_name, "MaxResults": PAGE_SIZE}
    while True:
        page = _call_with_backoff(client, request, backoff, sleep)
        shards.extend(Shard.from_api(item) for item in page.get("Shards", []))
        token = page.get("NextToken")
        if not token:
            return shards
        request = {"NextToken": token, "MaxResults": PAGE_SIZE}


def _call_with_backoff(
    client: KinesisClient, request: dict[str, Any], backoff: Backoff, sleep: Callable[[float], None]
) -> dict[str, Any]:
    attempt = 0
    while True:
        attempt += 1
        try:
            return dict(client.list_shards(**request))
        except ClientError as exc:
            if not is_throttling(exc) or attempt >= backoff.attempts:
                raise
            backoff.sleep(attempt, sleep)


@dataclass(frozen=True)
class StreamDescription:
    """Which stream this is: a name alone does not say, since a stream deleted and created again
    under the same name (same ARN) is another incarnation, told apart by its creation time."""

    name: str
    arn: str
    created_at: datetime
    retention_hours: int

    @property
    def account(self) -> str:
        return self.arn.split(":")[4]


def describe_stream(client: KinesisClient, stream_name: str) -> StreamDescription:
    """DescribeStreamSummary; StreamNotFoundError when there is no such stream."""
    try:
        summary = client.describe_stream_summary(StreamName=stream_name)["StreamDescriptionSummary"]
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            raise StreamNotFoundError(f"stream {stream_name!r} does not exist") from exc
        raise from_botocore(exc, operation="DescribeStreamSummary", resource=stream_name) from exc
    except BotoCoreError as exc:
        raise from_botocore(exc, operation="DescribeStreamSummary", resource=stream_name) from exc
    created = summary["StreamCreationTimestamp"]
    return StreamDescription(
        name=summary["StreamName"],
        arn=summary["StreamARN"],
        created_at=created.astimezone(UTC) if isinstance(created, datetime) else datetime.fromtimestamp(created, UTC),
        retention_hours=int(summary["RetentionPeriodHours"]),
    )


def retention_hours(client: KinesisClient, stream_name: str) -> int:
    """The stream's retention period (DescribeStreamSummary)."""
    return describe_stream(client, stream_name).retention_hours
