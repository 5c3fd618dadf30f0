"""The one place boto3 clients are built.

Endpoints, region and credentials come from the standard AWS environment, which boto3 reads
itself: ``AWS_ENDPOINT_URL``, ``AWS_ENDPOINT_URL_KINESIS``, ``AWS_ENDPOINT_URL_DYNAMODB``,
``AWS_DEFAULT_REGION``/``AWS_REGION``, ``AWS_ACCESS_KEY_ID``... The Airflow hook passes an
explicit ``boto3.Session`` and endpoint from its connection instead.

Kinesis clients get no botocore retries: the shard reader and lister count and pace their own
retries (throttling must be visible to them, and botocore's retry would hide it).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError
from botocore.parsers import ResponseParserFactory

from kinesis_batch.errors import from_botocore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient

_TIMEOUTS: dict[str, Any] = {"connect_timeout": 5, "read_timeout": 30, "tcp_keepalive": True}
KINESIS_CONFIG = Config(retries={"total_max_attempts": 1}, **_TIMEOUTS)
DYNAMODB_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 4}, **_TIMEOUTS)


def _epoch_timestamp(value: Any) -> datetime:
    """Parse a timestamp as the Kinesis JSON protocol sends it (epoch seconds, a number).

    botocore's default parser goes through dateutil and a local time zone, which costs more
    than half of its per-record CPU on GetRecords; Kinesis always sends epoch numbers.
    """
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, UTC)
    from botocore.utils import parse_timestamp

    parsed: datetime = parse_timestamp(value)
    return parsed.astimezone(UTC)


def kinesis_client(session: boto3.Session | None = None, *, endpoint_url: str | None = None) -> KinesisClient:
    client: KinesisClient = _client(session or boto3.Session(), "kinesis", endpoint_url, KINESIS_CONFIG)
    # A parser factory of this client's own, so the caller's session is left as it was.
    # botocore asks the endpoint's factory for a parser on every response.
    factory = ResponseParserFactory()
    factory.set_parser_defaults(timestamp_parser=_epoch_timestamp)
    client._endpoint._response_parser_factory = factory  # type: ignore[attr-defined]
    return client


def dynamodb_client(session: boto3.Session | None = None, *, endpoint_url: str | None = None) -> DynamoDBClient:
    dynamodb: DynamoDBClient = _client(session or boto3.Session(), "dynamodb", endpoint_url, DYNAMODB_CONFIG)
    return dynamodb


def _client(session: boto3.Session, service: str, endpoint_url: str | None, config: Config) -> Any:
    try:
        return session.client(service, endpoint_url=endpoint_url, config=config)  # type: ignore[call-overload]
    except BotoCoreError as exc:  # no region, a malformed endpoint URL, ...
        raise from_botocore(exc, operation=f"creating the {service} client") from exc
