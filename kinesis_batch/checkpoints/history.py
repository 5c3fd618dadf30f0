"""Checkpoint history: one item per committed move, in ``<lease table>-history``.

Kept beside the lease table (as the KCL keeps its extra tables) so the lease table holds
leases only. Keys: ``leaseKey`` (hash) and ``commitId`` (range: zero-padded commit time in ms,
then the zero-padded ``leaseCounter`` the commit was fenced on, then the batch id), so a
shard's history reads back in commit order, also when two commits fall in the same
millisecond (the counter grows with every write to the lease). A backfill starts "from the
checkpoint of run X" by looking up the entries of that run.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kinesis_batch.control.waiting import Waited
from kinesis_batch.cost import ReadCost
from kinesis_batch.errors import KinesisBatchError, MalformedLeaseError
from kinesis_batch.landing import Landing
from kinesis_batch.leases.dynamodb import ConditionFailed, call_dynamodb, create_table, table_status, wait_until_active
from kinesis_batch.leases.model import Item, checkpoint_attributes
from kinesis_batch.shards.checkpoint import Checkpoint

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def history_table_name(lease_table: str) -> str:
    return f"{lease_table}-history"


@dataclass(frozen=True)
class HistoryEntry:
    lease_key: str
    batch_id: str
    run_id: str | None
    owner: str
    committed_at: datetime
    from_checkpoint: Checkpoint
    to_checkpoint: Checkpoint
    records: int
    lease_counter: int = 0  # the leaseCounter the commit was fenced on
    lag_at_start_ms: int | None = None  # the shard's lag when the batch's read began (None: not known)
    landing: Landing | None = None  # decoded: rows, dead letters, filtered, the commonest reasons
    cost: ReadCost | None = None  # the read's bill, when a service billed it (the run's, on each entry)
    # What the run's control-plane calls met, when they met anything (the run's, on each entry).
    control_plane: Waited | None = None

    @property
    def commit_id(self) -> str:
        millis = int(self.committed_at.timestamp() * 1000)
        return f"{millis:015d}#{self.lease_counter:020d}#{self.batch_id}"

    def to_item(self) -> Item:
        item: Item = {
            "leaseKey": {"S": self.lease_key},
            "commitId": {"S": self.commit_id},
            "batchId": {"S": self.batch_id},
            "owner": {"S": self.owner},
            "committedAt": {"S": self.committed_at.isoformat()},
            "records": {"N": str(self.records)},
            "leaseCounter": {"N": str(self.lease_counter)},
            **_prefixed("from", checkpoint_attributes(self.from_checkpoint)),
            **_prefixed("to", checkpoint_attributes(self.to_checkpoint)),
        }
        if self.run_id is not None:
            item["runId"] = {"S": self.run_id}
        if self.lag_at_start_ms is not None:
            item["lagAtStartMillis"] = {"N": str(self.lag_at_start_ms)}
        if self.cost is not None:
            item["readCost"] = {"S": json.dumps(self.cost.to_json(), sort_keys=True)}
        if self.control_plane is not None:
            item["controlPlane"] = {"S": json.dumps(self.control_plane.to_json(), sort_keys=True)}
        if self.landing is not None:
            item |= {
                "rows": {"N": str(self.landing.rows)},
                "deadLetters": {"N": str(self.landing.dead_letters)},
                "filtered": {"N": str(self.landing.filtered)},
                "deadLetterReasons": {"M": {k: {"N": str(v)} for k, v in self.landing.reasons.items()}},
                **(
                    {"changes": {"M": {k: {"N": str(v)} for k, v in self.landing.changes.items()}}}
                    if self.landing.changes
                    else {}
                ),
                # routed: each table's rows, and (changes) what its changes did
                **({"tables": _counts(self.landing.tables)} if self.landing.tables else {}),
                **(
                    {"tableChanges": {"M": {r: _counts(c) for r, c in self.landing.table_changes.items()}}}
                    if self.landing.table_changes
                    else {}
                ),
            }
        return item

    @classmethod
    def from_item(cls, item: dict[str, dict[str, Any]]) -> HistoryEntry:
        try:
            return cls(
                lease_key=item["leaseKey"]["S"],
                batch_id=item["batchId"]["S"],
                run_id=item["runId"]["S"] if "runId" in item else None,
                owner=item["owner"]["S"],
                committed_at=datetime.fromisoformat(item["committedAt"]["S"]),
                from_checkpoint=_checkpoint(item, "from"),
                to_checkpoint=_checkpoint(item, "to"),
                records=int(item["records"]["N"]),
                lease_counter=int(item["leaseCounter"]["N"]) if "leaseCounter" in item else 0,
                lag_at_start_ms=int(item["lagAtStartMillis"]["N"]) if "lagAtStartMillis" in item else None,
                landing=_landing(item),
                cost=ReadCost.from_json(json.loads(item["readCost"]["S"])) if "readCost" in item else None,
                control_plane=Waited(**json.loads(item["controlPlane"]["S"])) if "controlPlane" in item else None,
            )
        except (KeyError, ValueError, KinesisBatchError) as exc:
            raise MalformedLeaseError(f"malformed checkpoint history item: {exc}") from exc


class HistoryTable:
    def __init__(self, client: DynamoDBClient, lease_table: str) -> None:
        self.client = client
        self.table_name = history_table_name(lease_table)

    def create_if_not_exists(self, *, timeout: float = 60.0) -> bool:
        created = create_table(self.client, self.table_name, [("leaseKey", "S", "HASH"), ("commitId", "S", "RANGE")])
        wait_until_active(self.client, self.table_name, timeout=timeout)
        return created

    def exists(self) -> bool:
        return table_status(self.client, self.table_name) is not None

    def delete(self) -> None:
        call_dynamodb("DeleteTable", self.table_name, lambda: self.client.delete_table(TableName=self.table_name))

    def record(self, entry: HistoryEntry) -> None:
        """Record ``entry`` on its own: an operator's move (a reset, a KCL hand-over), not a
        commit. Once: the same entry again changes nothing."""
        self.put_once(entry.to_item())

    def put_once(self, item: dict[str, Any]) -> None:
        """Put ``item`` unless an item of its key is there (the same record again changes nothing)."""
        with contextlib.suppress(ConditionFailed):
            call_dynamodb(
                "PutItem",
                self.table_name,
                lambda: self.client.put_item(
                    TableName=self.table_name, Item=item, ConditionExpression="attribute_not_exists(commitId)"
                ),
            )

    def put_request(self, entry: HistoryEntry) -> dict[str, Any]:
        """The TransactWriteItems element that records ``entry`` (once: a replay fails)."""
        return {
            "Put": {
                "TableName": self.table_name,
                "Item": entry.to_item(),
                "ConditionExpression": "attribute_not_exists(commitId)",
            }
        }

    def for_shard(self, lease_key: str) -> list[HistoryEntry]:
        """A shard's history, oldest commit first."""
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "leaseKey = :k",
            "ExpressionAttributeValues": {":k": {"S": lease_key}},
            "ConsistentRead": True,
        }
        return [HistoryEntry.from_item(i) for i in self._pages("Query", self.client.query, request)]

    def items_under(self, lease_key: str, prefix: str) -> list[dict[str, dict[str, Any]]]:
        """The raw items of ``lease_key`` whose commitId starts with ``prefix``, oldest first (the
        reserved items beside the commits: kinesis_batch.binding's output moves)."""
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "leaseKey = :k AND begins_with(commitId, :p)",
            "ExpressionAttributeValues": {":k": {"S": lease_key}, ":p": {"S": prefix}},
            "ConsistentRead": True,
        }
        return self._pages("Query", self.client.query, request)

    def for_run(self, run_id: str) -> list[HistoryEntry]:
        """Every entry a run committed, by shard then commit time."""
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "FilterExpression": "runId = :r",
            "ExpressionAttributeValues": {":r": {"S": run_id}},
            "ConsistentRead": True,
        }
        entries = [HistoryEntry.from_item(i) for i in self._pages("Scan", self.client.scan, request)]
        return sorted(entries, key=lambda e: (e.lease_key, e.commit_id))

    def _pages(self, operation: str, call: Any, request: dict[str, Any]) -> list[dict[str, dict[str, Any]]]:
        items: list[dict[str, dict[str, Any]]] = []
        while True:
            page = call_dynamodb(operation, self.table_name, lambda: call(**request))
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def utc_now() -> datetime:
    return datetime.now(UTC)


def _prefixed(prefix: str, item: Item) -> Item:
    return {prefix + name[0].upper() + name[1:]: value for name, value in item.items()}


def _landing(item: dict[str, dict[str, Any]]) -> Landing | None:
    if "deadLetters" not in item:
        return None
    reasons = {kind: int(count["N"]) for kind, count in item.get("deadLetterReasons", {}).get("M", {}).items()}
    changes = {kind: int(count["N"]) for kind, count in item.get("changes", {}).get("M", {}).items()}
    tables = {route: int(rows["N"]) for route, rows in sorted(item.get("tables", {}).get("M", {}).items())}
    table_changes = {
        route: {kind: int(count["N"]) for kind, count in sorted(kinds["M"].items())}
        for route, kinds in sorted(item.get("tableChanges", {}).get("M", {}).items())
    }
    rows, dead, filtered = (int(item[name]["N"]) for name in ("rows", "deadLetters", "filtered"))
    return Landing(rows, dead, filtered, reasons, changes, tables=tables, table_changes=table_changes)


def _counts(counts: Mapping[str, int]) -> dict[str, Any]:
    """Counts by name as a DynamoDB map of numbers."""
    return {"M": {name: {"N": str(count)} for name, count in counts.items()}}


def _checkpoint(item: dict[str, dict[str, Any]], prefix: str) -> Checkpoint:
    timestamp = item.get(f"{prefix}CheckpointTimestamp", {}).get("S")
    return Checkpoint(
        item[f"{prefix}Checkpoint"]["S"],
        int(item[f"{prefix}CheckpointSubSequenceNumber"]["N"]),
        datetime.fromisoformat(timestamp) if timestamp else None,
    )
