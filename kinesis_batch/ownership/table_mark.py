"""The mark of a kinesis-batch table pair: whose lease table this is.

A lease table does not say which stream its shard ids belong to, and a stream's name does not
say which incarnation of it (a stream deleted and created again keeps its name and ARN). So a
table pair kinesis-batch makes carries a mark: a reserved item of its history table,
``<lease table>-history``, keyed ``leaseKey = "#kinesis-batch"``, ``commitId = "#table"``. It
names the stream (name and ARN), the stream's creation time (its incarnation) and the table
format's version.

Why an item of the history table, and not table tags or an item of the lease table: a read of it
is strongly consistent and its writes are conditional (two first runs make one mark), it needs
no permission beyond the ones the history already has (tags need ``TagResource`` and
``ListTagsOfResource``), and the lease table keeps holding leases only, as KCL's does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.errors import LeaseTableNotFoundError, MalformedLeaseError
from kinesis_batch.leases.dynamodb import ConditionFailed, call_dynamodb

#: The table format this install writes and understands. A table of a newer one is refused.
FORMAT_VERSION = 1
MARK_KEY = {"leaseKey": {"S": "#kinesis-batch"}, "commitId": {"S": "#table"}}


@dataclass(frozen=True)
class TableMark:
    stream: str
    stream_arn: str
    stream_created_at: datetime  # the incarnation the checkpoints belong to
    marked_at: datetime
    marked_by: str  # created | adopted | reset by ... | imported from KCL table ...
    format_version: int = FORMAT_VERSION
    # The output this consumer publishes to, and its dead-letter output, as asset URIs
    # (kinesis_batch.binding); None on a table made before outputs were recorded.
    output: str | None = None
    dead_letter_output: str | None = None

    def to_item(self) -> dict[str, dict[str, Any]]:
        outputs = {"output": self.output, "deadLetterOutput": self.dead_letter_output}
        return {
            **{name: {"S": value} for name, value in outputs.items() if value},
            **MARK_KEY,
            "markOf": {"S": "kinesis-batch"},
            "formatVersion": {"N": str(self.format_version)},
            "streamName": {"S": self.stream},
            "streamArn": {"S": self.stream_arn},
            "streamCreatedAt": {"S": self.stream_created_at.isoformat()},
            "markedAt": {"S": self.marked_at.isoformat()},
            "markedBy": {"S": self.marked_by},
        }

    @classmethod
    def from_item(cls, item: Mapping[str, Any], table: str) -> TableMark:
        try:
            return cls(
                stream=item["streamName"]["S"],
                stream_arn=item["streamArn"]["S"],
                stream_created_at=datetime.fromisoformat(item["streamCreatedAt"]["S"]),
                marked_at=datetime.fromisoformat(item["markedAt"]["S"]),
                marked_by=item["markedBy"]["S"],
                format_version=int(item["formatVersion"]["N"]),
                output=item["output"]["S"] if "output" in item else None,
                dead_letter_output=item["deadLetterOutput"]["S"] if "deadLetterOutput" in item else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MalformedLeaseError(f"the mark of {table} is malformed: {exc}") from exc


def read_mark(history: HistoryTable) -> TableMark | None:
    """The mark, or None when there is none (or no history table)."""
    try:
        response = call_dynamodb(
            "GetItem",
            history.table_name,
            lambda: history.client.get_item(TableName=history.table_name, Key=MARK_KEY, ConsistentRead=True),
        )
    except LeaseTableNotFoundError:
        return None
    item = response.get("Item")
    return TableMark.from_item(item, history.table_name) if item else None


def write_mark(history: HistoryTable, mark: TableMark, *, replacing: TableMark | None = None) -> bool:
    """Put ``mark`` if there is none (``replacing`` None), or in place of ``replacing`` as last
    read. False when the condition did not hold: another process marked the table first."""
    if replacing is None:
        condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(leaseKey)"}
    else:
        condition = {
            "ConditionExpression": "markedAt = :seen",
            "ExpressionAttributeValues": {":seen": {"S": replacing.marked_at.isoformat()}},
        }
    try:
        call_dynamodb(
            "PutItem",
            history.table_name,
            lambda: history.client.put_item(TableName=history.table_name, Item=mark.to_item(), **condition),
        )
    except ConditionFailed:
        return False
    return True


__all__ = ["FORMAT_VERSION", "MARK_KEY", "TableMark", "read_mark", "write_mark"]
