"""Every job run a table's runs were billed for, whatever its outcome: kept in the checkpoint
history table beside the commits, so a job run that was cancelled, failed or read nothing (and
so committed nothing) still shows in ``history --runs`` with its cost.

Items: ``leaseKey`` :data:`BILLS_KEY` (no shard is called that), ``commitId`` ``#job-run/``
and the job run's id, so a job run is recorded once whoever records it (the run that started
it, or the next run, which cancelled it as left behind) and however often.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.cost import ReadCost
from kinesis_batch.errors import MalformedLeaseError
from kinesis_batch.leases.model import Item

BILLS_KEY = "#job-runs"
_PREFIX = "#job-run/"


@dataclass(frozen=True)
class Bill:
    """A job run that read (or was to read) batch ``run_id``: how it ended, when, and its bill."""

    run_id: str
    state: str
    ended_at: datetime
    cost: ReadCost

    def to_item(self) -> Item:
        cost = self.cost
        return {
            "leaseKey": {"S": BILLS_KEY},
            "commitId": {"S": _PREFIX + cost.job_run_id},
            "runId": {"S": self.run_id},
            "state": {"S": self.state},
            "endedAt": {"S": self.ended_at.isoformat()},
            "applicationId": {"S": cost.application_id},
            "vcpuHours": {"N": repr(cost.vcpu_hours)},
            "memoryGBHours": {"N": repr(cost.memory_gb_hours)},
            "storageGBHours": {"N": repr(cost.storage_gb_hours)},
        }

    @classmethod
    def from_item(cls, item: Item) -> Bill:
        try:
            cost = ReadCost(
                item["commitId"]["S"].removeprefix(_PREFIX),
                item["applicationId"]["S"],
                float(item["vcpuHours"]["N"]),
                float(item["memoryGBHours"]["N"]),
                float(item["storageGBHours"]["N"]),
            )
            return cls(item["runId"]["S"], item["state"]["S"], datetime.fromisoformat(item["endedAt"]["S"]), cost)
        except (KeyError, ValueError) as exc:
            raise MalformedLeaseError(f"malformed job run bill in the checkpoint history: {exc}") from exc

    def to_json(self) -> dict[str, object]:
        return {**self.cost.to_json(), "state": self.state, "ended_at": self.ended_at.isoformat()}


def record_bill(history: HistoryTable, bill: Bill) -> None:
    """Keep ``bill`` (once: the same job run again changes nothing)."""
    history.put_once(bill.to_item())


def bills(history: HistoryTable) -> list[Bill]:
    """Every job run billed to the table's runs, by the time it ended."""
    found = [Bill.from_item(item) for item in history.items_under(BILLS_KEY, _PREFIX)]
    return sorted(found, key=lambda bill: (bill.ended_at, bill.cost.job_run_id))


__all__ = ["BILLS_KEY", "Bill", "bills", "record_bill"]
