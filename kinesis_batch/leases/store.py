"""The lease table in DynamoDB (the KCL's LeaseRefresher, in Python).

Contract:
- Every write that depends on ownership is conditional. Losing the condition is a normal
  result, never an error: a fenced write returns ``None``, a create of an item that exists
  returns ``False``.
- Methods that change a lease return the lease as stored afterwards (``ReturnValues=ALL_NEW``),
  so callers always fence their next write with the current ``leaseCounter``.
- Reads are strongly consistent: a lease is never judged on a stale copy.
- botocore errors leave as this package's errors (missing table: LeaseTableNotFoundError).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.leases.dynamodb import ConditionFailed, call_dynamodb, create_table, table_status, wait_until_active
from kinesis_batch.leases.model import Item, Lease

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")

#: Attributes the application may set with :meth:`LeaseStore.update_application_fields`, and
#: the Python type of each (an item with a value of another type would no longer parse).
APPLICATION_FIELD_TYPES: dict[str, type] = {
    "lineageDepth": int,
    "lastRunId": str,
    "lastBatchId": str,
    "settleFailure": str,
}
APPLICATION_FIELDS = frozenset(APPLICATION_FIELD_TYPES)


class LeaseStore:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        if not table_name:
            raise IllegalArgumentError("the lease table needs a name")
        self.client = client
        self.table_name = table_name

    # -- the table ----------------------------------------------------------------------------

    def create_table_if_not_exists(self, *, timeout: float = 60.0) -> bool:
        """Create the table (on-demand billing) and wait until ACTIVE. True if it was created."""
        created = create_table(self.client, self.table_name, [("leaseKey", "S", "HASH")])
        wait_until_active(self.client, self.table_name, timeout=timeout)
        return created

    def table_exists(self) -> bool:
        return table_status(self.client, self.table_name) is not None

    def delete_table(self) -> None:
        self._call("DeleteTable", lambda: self.client.delete_table(TableName=self.table_name))

    # -- reading ------------------------------------------------------------------------------

    def list_leases(self) -> list[Lease]:
        return [Lease.from_item(item) for item in self._scan()]

    def items(self) -> list[Item]:
        """Every item as stored, unparsed: what a table that may not be ours holds."""
        return list(self._scan())

    def get_lease(self, lease_key: str) -> Lease | None:
        response = self._call(
            "GetItem",
            lambda: self.client.get_item(TableName=self.table_name, Key=_key(lease_key), ConsistentRead=True),
        )
        item = response.get("Item")
        return Lease.from_item(item) if item else None

    def is_empty(self) -> bool:
        response = self._call("Scan", lambda: self.client.scan(TableName=self.table_name, Limit=1, ConsistentRead=True))
        return not response.get("Items")

    # -- writing ------------------------------------------------------------------------------

    def create_lease_if_not_exists(self, lease: Lease) -> bool:
        """Put ``lease`` unless an item with its key exists. False when one did."""
        try:
            self._call(
                "PutItem",
                lambda: self.client.put_item(
                    TableName=self.table_name,
                    Item=lease.to_item(),
                    ConditionExpression="attribute_not_exists(leaseKey)",
                ),
            )
        except ConditionFailed:
            return False
        return True

    def renew_lease(self, lease: Lease, expires_at_ms: int) -> Lease | None:
        """Extend a lease we hold; ``None`` if it is no longer ours at this counter."""
        return self.update(
            lease,
            "SET leaseCounter = leaseCounter + :one, leaseExpiresAt = :expires",
            {":expires": {"N": str(expires_at_ms)}},
        )

    def take_lease(
        self, lease: Lease, owner: str, expires_at_ms: int, *, pending_batch: str | None = None
    ) -> Lease | None:
        """Take ``lease`` as last seen (same owner, same counter) for ``owner``; with
        ``pending_batch``, mark it with that batch in the same write (``pendingBatchId``, no
        pending checkpoint: the batch keeps the checkpoint until it is prepared), refused if
        another batch is pending on it.

        Whether it may be taken (expired, free, forced) is the caller's decision; the store
        only makes sure nobody changed it since it was read.
        """
        switches = "" if lease.lease_owner == owner else ", ownerSwitchesSinceCheckpoint = :switches"
        values = {
            ":owner": {"S": owner},
            ":expires": {"N": str(expires_at_ms)},
            **({":switches": {"N": str(lease.owner_switches_since_checkpoint + 1)}} if switches else {}),
        }
        expression = f"SET leaseOwner = :owner, leaseCounter = leaseCounter + :one, leaseExpiresAt = :expires{switches}"
        if pending_batch is None:
            return self.update(lease, expression, values)
        return self.update(
            lease,
            f"{expression}, pendingBatchId = :batch REMOVE pendingCheckpoint, pendingCheckpointSubSequenceNumber",
            values | {":batch": {"S": pending_batch}},
            condition="attribute_not_exists(pendingBatchId) OR pendingBatchId = :batch",
        )

    def release_lease(self, lease: Lease) -> Lease | None:
        """Give up a lease we hold, leaving its checkpoint; ``None`` if it was not ours any more."""
        return self.update(lease, "SET leaseCounter = leaseCounter + :one REMOVE leaseOwner, leaseExpiresAt")

    def evict_lease(self, lease: Lease) -> Lease | None:
        """Remove the owner seen in ``lease`` whatever its counter (an operator's action)."""
        if lease.lease_owner is None:
            return lease
        return self.update(
            lease,
            "SET leaseCounter = leaseCounter + :one REMOVE leaseOwner, leaseExpiresAt",
            fence_counter=False,
        )

    def update_application_fields(self, lease: Lease, fields: dict[str, str | int]) -> Lease | None:
        """Set our own attributes (see APPLICATION_FIELDS) on a lease we hold."""
        unknown = set(fields) - APPLICATION_FIELDS
        if unknown:
            raise IllegalArgumentError(f"not application fields: {', '.join(sorted(unknown))}")
        for name, value in fields.items():
            expected = APPLICATION_FIELD_TYPES[name]
            if not isinstance(value, expected) or isinstance(value, bool):
                raise IllegalArgumentError(f"{name} must be {expected.__name__}, got {value!r}")
        if not fields:
            return lease
        names = {f"#f{i}": name for i, name in enumerate(fields)}
        values = {f":f{i}": ({"N": str(v)} if isinstance(v, int) else {"S": v}) for i, v in enumerate(fields.values())}
        assignments = ", ".join(f"#f{i} = :f{i}" for i in range(len(fields)))
        return self.update(lease, f"SET leaseCounter = leaseCounter + :one, {assignments}", values, names=names)

    def delete_lease_as_seen(self, lease: Lease) -> bool:
        """Delete ``lease`` only as last seen (every take, renew and write bumps the counter it is
        fenced on); False if it changed meanwhile."""
        fence = {":counter": {"N": str(lease.lease_counter)}}
        condition = "leaseCounter = :counter"
        try:
            self._call(
                "DeleteItem",
                lambda: self.client.delete_item(
                    TableName=self.table_name,
                    Key=_key(lease.lease_key),
                    ConditionExpression=condition,
                    ExpressionAttributeValues=fence,
                ),
            )
        except ConditionFailed:
            return False
        return True

    def delete_lease(self, lease_key: str) -> None:
        """Delete the item whatever its state (an operator's or a cleanup action)."""
        self._call("DeleteItem", lambda: self.client.delete_item(TableName=self.table_name, Key=_key(lease_key)))

    def delete_all(self) -> int:
        """Delete every lease; returns how many were deleted."""
        count = 0
        for item in self._scan(projection="leaseKey"):
            self.delete_lease(item["leaseKey"]["S"])
            count += 1
        return count

    def update(
        self,
        lease: Lease,
        expression: str,
        values: dict[str, dict[str, Any]] | None = None,
        *,
        names: dict[str, str] | None = None,
        condition: str = "",
        fence_counter: bool = True,
    ) -> Lease | None:
        """A fenced update: applies only if the item still has ``lease``'s owner (and counter).

        ``expression`` may use ``:one``; ``condition`` adds to the fence. Returns the new lease,
        or ``None`` when the fence (or ``condition``) did not hold.
        """
        values = {":one": {"N": "1"}, **(values or {})}
        fence = []
        if lease.lease_owner is None:
            fence.append("attribute_not_exists(leaseOwner)")
        else:
            fence.append("leaseOwner = :fence_owner")
            values[":fence_owner"] = {"S": lease.lease_owner}
        if fence_counter:
            fence.append("leaseCounter = :fence_counter")
            values[":fence_counter"] = {"N": str(lease.lease_counter)}
        if condition:
            fence.append(f"({condition})")
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": _key(lease.lease_key),
            "UpdateExpression": expression,
            "ConditionExpression": "attribute_exists(leaseKey) AND " + " AND ".join(fence),
            "ExpressionAttributeValues": values,
            "ReturnValues": "ALL_NEW",
        }
        if names:
            request["ExpressionAttributeNames"] = names
        try:
            response = self._call("UpdateItem", lambda: self.client.update_item(**request))
        except ConditionFailed:
            return None
        return Lease.from_item(response["Attributes"])

    # -- plumbing -----------------------------------------------------------------------------

    def _scan(self, projection: str | None = None) -> Iterator[Item]:
        request: dict[str, Any] = {"TableName": self.table_name, "ConsistentRead": True}
        if projection:
            request["ProjectionExpression"] = projection
        while True:
            page = self._call("Scan", lambda: self.client.scan(**request))
            yield from cast(list[Item], page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _call(self, operation: str, call: Callable[[], T]) -> T:
        return call_dynamodb(operation, self.table_name, call)


def _key(lease_key: str) -> dict[str, dict[str, Any]]:
    return {"leaseKey": {"S": lease_key}}
