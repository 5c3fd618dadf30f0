"""Job runs' bills in the checkpoint history table (moto_server): kept once per job run, read
back in the order they ended, never mistaken for a shard's commits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kinesis_batch.checkpoints.bills import Bill, bills, record_bill
from kinesis_batch.checkpoints.store import DynamoDBCheckpointStore
from kinesis_batch.cost import ReadCost
from kinesis_batch.errors import MalformedLeaseError

T0 = datetime(2026, 11, 29, 13, 0, tzinfo=UTC)


def bill(job: str, minute: int, state: str = "SUCCESS", run: str = "run-1") -> Bill:
    return Bill(run, state, T0 + timedelta(minutes=minute), ReadCost(job, "app-1", 0.0667, 0.2667, 0.3333))


def test_bills_read_back_in_the_order_they_ended_and_a_job_run_is_kept_once(store: DynamoDBCheckpointStore) -> None:
    history = store.history
    record_bill(history, bill("job-b", 5, "CANCELLED"))
    record_bill(history, bill("job-a", 9))
    record_bill(history, bill("job-b", 7, "CANCELLED", run="another"))  # the same job run again: kept as first said

    assert bills(history) == [bill("job-b", 5, "CANCELLED"), bill("job-a", 9)]
    # Beside the commits, not among them: no shard's history holds them.
    assert all(history.for_shard(shard) == [] for shard in ("shard-0", "shard-1"))


def test_an_item_round_trips_and_a_malformed_one_is_one_error() -> None:
    kept = bill("job-1", 0, "FAILED")
    assert Bill.from_item(kept.to_item()) == kept
    assert kept.to_json()["state"] == "FAILED" and kept.to_json()["job_run_id"] == "job-1"
    broken = kept.to_item()
    del broken["endedAt"]
    with pytest.raises(MalformedLeaseError, match="malformed job run bill"):
        Bill.from_item(broken)
