"""The DynamoDB boundary of the lease and history tables: one call translated, and the tables'
own life (create, status, wait). botocore's errors leave as this package's: a missing table as
LeaseTableNotFoundError, a lost condition as :class:`ConditionFailed`, which the stores turn
into a return value.

The tables' own calls (CreateTable, DescribeTable) are the control plane's: at the top of the
hour many runs make them at once, so a throttle (LimitExceededException: too many table
operations at a time; ThrottlingException) or a dropped connection is ridden out with backoff
and jitter (kinesis_batch.aws.retrying), beyond botocore's few quick retries, not a failed run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from kinesis_batch._backoff import Backoff
from kinesis_batch.aws import CONTROL_PLANE_BACKOFF, retrying
from kinesis_batch.errors import InvalidStateError, LeaseTableNotFoundError, error_code, from_botocore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")


class ConditionFailed(Exception):
    """A conditional write lost: the stores turn it into a return value, never let it out."""


class _TableInUse(Exception):
    """Internal: the table exists already (or is being created); create_table says False."""


def call_dynamodb(operation: str, table_name: str, call: Callable[[], T]) -> T:
    """Run one DynamoDB call, translating botocore errors (the boundary for DynamoDB stores)."""
    try:
        return call()
    except ClientError as exc:
        code = error_code(exc)
        if code == "ConditionalCheckFailedException":
            raise ConditionFailed() from exc
        if code == "ResourceInUseException":
            raise _TableInUse() from exc
        if code == "ResourceNotFoundException":
            raise LeaseTableNotFoundError(
                f"DynamoDB table {table_name!r} does not exist (create it with the lease store, "
                "or check the region and endpoint)"
            ) from exc
        raise from_botocore(exc, operation=operation, resource=table_name) from exc
    except BotoCoreError as exc:
        raise from_botocore(exc, operation=operation, resource=table_name) from exc


def transact_write(client: DynamoDBClient, table_name: str, items: list[Any]) -> bool:
    """One TransactWriteItems; False when it was cancelled because the first item's condition
    failed (a lost fence: a return value), any other failure raised as this package's."""
    try:
        client.transact_write_items(TransactItems=items)
    except ClientError as exc:
        reasons = exc.response.get("CancellationReasons") or []
        if (
            error_code(exc) == "TransactionCanceledException"
            and reasons
            and reasons[0].get("Code") == "ConditionalCheckFailed"
        ):
            return False
        raise from_botocore(exc, operation="TransactWriteItems", resource=table_name) from exc
    except BotoCoreError as exc:
        raise from_botocore(exc, operation="TransactWriteItems", resource=table_name) from exc
    return True


KeySpec = tuple[str, Literal["S", "N", "B"], Literal["HASH", "RANGE"]]


def create_table(
    client: DynamoDBClient,
    table_name: str,
    keys: list[KeySpec],
    *,
    backoff: Backoff = CONTROL_PLANE_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Create an on-demand table with ``keys`` as (name, type, HASH|RANGE); False if it existed
    (also when a try that was dropped had created it: the next one finds it in use)."""

    def create() -> Any:
        return client.create_table(
            TableName=table_name,
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": t} for n, t, _ in keys],
            KeySchema=[{"AttributeName": n, "KeyType": k} for n, _, k in keys],
            BillingMode="PAY_PER_REQUEST",
        )

    try:
        retrying(
            lambda: call_dynamodb("CreateTable", table_name, create),
            backoff=backoff,
            sleep=sleep,
            operation="CreateTable",
            resource=table_name,
        )
    except _TableInUse:
        return False
    return True


def table_status(
    client: DynamoDBClient,
    table_name: str,
    *,
    backoff: Backoff = CONTROL_PLANE_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """The table's status, or ``None`` if it does not exist."""

    def describe() -> Any:
        return call_dynamodb("DescribeTable", table_name, lambda: client.describe_table(TableName=table_name))

    try:
        described = retrying(describe, backoff=backoff, sleep=sleep, operation="DescribeTable", resource=table_name)
    except LeaseTableNotFoundError:
        return None
    return str(described["Table"]["TableStatus"])


def wait_until_active(client: DynamoDBClient, table_name: str, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while (status := table_status(client, table_name)) != "ACTIVE":
        if time.monotonic() > deadline:
            raise InvalidStateError(f"table {table_name!r} is {status or 'missing'} after {timeout:.0f} s")
        time.sleep(0.2)
