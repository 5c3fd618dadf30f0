"""List every shard of a stream with paginated ListShards.

Contract: returns each shard once, in the service's order, or raises. Throttling and a
transient failure of the endpoint (a dropped connection, a timeout, a 5xx) are retried with
bounded backoff (``aws.retried``), each page and each description alike; an expired NextToken
restarts the listing once; every other client error ends the listing with a typed error
(harlow/kinesis-consumer#131 looped silently instead).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from kinesis_batch._backoff import Backoff
from kinesis_batch.aws import CONTROL_PLANE_BACKOFF, Handler, account_of, retried
from kinesis_batch.errors import KinesisBatchError, StreamNotFoundError
from kinesis_batch.shards.model import Shard, stream_argument

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient

PAGE_SIZE = 1000  # the API's maximum MaxResults


def list_shards(
    client: KinesisClient,
    stream_name: str,
    *,
    backoff: Backoff = CONTROL_PLANE_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Shard]:
    """All shards of ``stream_name`` (open and closed, as far as retention keeps them)."""
    try:
        return _list_once(client, stream_name, backoff, sleep)
    except _TokenExpired:  # a NextToken lives 300 s; a listing that slow is restarted once, never looped
        pass
    try:
        return _list_once(client, stream_name, backoff, sleep)
    except _TokenExpired as expired:
        raise expired.error from expired


def _list_once(
    client: KinesisClient, stream_name: str, backoff: Backoff, sleep: Callable[[float], None]
) -> list[Shard]:
    shards: list[Shard] = []
    # The first page is asked by stream name, the next ones by NextToken alone (AWS rejects both).
    request: dict[str, Any] = {**stream_argument(stream_name), "MaxResults": PAGE_SIZE}
    codes = {"ExpiredNextTokenException": _TokenExpired, "ResourceNotFoundException": _missing(stream_name)}
    while True:
        call = partial(client.list_shards, **request)
        page = retried(
            "ListShards", stream_name, call, codes=codes, backoff=backoff, sleep=sleep, account=account_of(client)
        )
        shards.extend(Shard.from_api(item) for item in page.get("Shards", []))
        token = page.get("NextToken")
        if not token:
            return shards
        request = {"NextToken": token, "MaxResults": PAGE_SIZE}


class _TokenExpired(Exception):
    def __init__(self, error: KinesisBatchError) -> None:
        super().__init__(str(error))
        self.error = error


def _missing(stream: str) -> Handler:
    return lambda _: StreamNotFoundError(f"stream {stream!r} does not exist")


@dataclass(frozen=True)
class StreamDescription:
    """Which stream this is: a name alone does not say, since a stream deleted and created again
    under the same name (same ARN) is another incarnation, told apart by its creation time."""

    name: str
    arn: str
    created_at: datetime
    retention_hours: int
    addressed: str = ""  # what it was described by: its ARN (another account's stream), else its name
    key_id: str = ""  # the KMS key its records are encrypted with (server-side encryption), else ""

    @property
    def stream_id(self) -> str:
        """What Kinesis calls name it by (kinesis_batch.shards.model.stream_argument)."""
        return self.addressed or self.name

    @property
    def account(self) -> str:
        return self.arn.split(":")[4]


def describe_stream(
    client: KinesisClient,
    stream_name: str,
    *,
    backoff: Backoff = CONTROL_PLANE_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
) -> StreamDescription:
    """DescribeStreamSummary (retried as ListShards is); StreamNotFoundError when there is no
    such stream."""
    described = retried(
        "DescribeStreamSummary",
        stream_name,
        lambda: client.describe_stream_summary(**stream_argument(stream_name)),
        codes={"ResourceNotFoundException": _missing(stream_name)},
        backoff=backoff,
        sleep=sleep,
        account=account_of(client),
    )
    summary = described["StreamDescriptionSummary"]
    created = summary["StreamCreationTimestamp"]
    return StreamDescription(
        name=summary["StreamName"],
        arn=summary["StreamARN"],
        created_at=created.astimezone(UTC) if isinstance(created, datetime) else datetime.fromtimestamp(created, UTC),
        retention_hours=int(summary["RetentionPeriodHours"]),
        addressed=stream_name,
        key_id=str(summary.get("KeyId") or "") if summary.get("EncryptionType") == "KMS" else "",
    )


def retention_hours(client: KinesisClient, stream_name: str) -> int:
    """The stream's retention period (DescribeStreamSummary)."""
    return describe_stream(client, stream_name).retention_hours
