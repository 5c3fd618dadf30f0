"""The commit record: what a published batch moved, per shard. It travels with the batch (inside
the parquet folder, or in the table commit's own metadata), so recovery can roll checkpoints
forward from the output alone."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from kinesis_batch.cost import ReadCost
from kinesis_batch.landing import Landing, total
from kinesis_batch.shards.checkpoint import Checkpoint


@dataclass(frozen=True)
class ShardCommit:
    shard_id: str
    start: Checkpoint
    end: Checkpoint
    records: int
    reached_shard_end: bool
    trimmed_after: str | None = None  # retention had trimmed past ``start`` (read with --allow-gaps)
    lag_at_start_ms: int | None = None  # the shard's lag when the read began (the history keeps it)
    landing: Landing | None = None  # decoded: what its records became (rows, dead letters, filtered)
    bytes: int = 0  # the records' payload bytes read
    millis_behind_latest: int | None = None  # the last GetRecords' MillisBehindLatest of the read


@dataclass(frozen=True)
class CommitRecord:
    batch_id: str
    run_id: str
    stream: str
    created_at: datetime
    shards: tuple[ShardCommit, ...]
    cost: ReadCost | None = None  # what the read was billed, when a service billed it (kinesis_batch.cost)

    def shard(self, shard_id: str) -> ShardCommit | None:
        return next((s for s in self.shards if s.shard_id == shard_id), None)

    @property
    def records(self) -> int:
        return sum(s.records for s in self.shards)

    @property
    def landing(self) -> Landing | None:
        """What the batch's records became, all shards together (None: raw rows)."""
        return total([s.landing for s in self.shards])

    def to_json(self, *, indent: int | None = 1) -> str:
        body: dict[str, Any] = asdict(self)
        body["created_at"] = self.created_at.isoformat()
        body["shards"] = [
            {
                **asdict(s),
                "start": s.start.to_json(),
                "end": s.end.to_json(),
                "landing": s.landing.to_json() if s.landing else None,
            }
            for s in self.shards
        ]
        body["cost"] = self.cost.to_json() if self.cost else None
        return json.dumps(body, indent=indent, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CommitRecord:
        body = json.loads(text)
        return cls(
            batch_id=body["batch_id"],
            run_id=body["run_id"],
            stream=body["stream"],
            created_at=datetime.fromisoformat(body["created_at"]),
            shards=tuple(
                ShardCommit(
                    shard_id=s["shard_id"],
                    start=Checkpoint.from_json(s["start"]),
                    end=Checkpoint.from_json(s["end"]),
                    records=int(s["records"]),
                    reached_shard_end=bool(s["reached_shard_end"]),
                    trimmed_after=s.get("trimmed_after"),
                    lag_at_start_ms=s.get("lag_at_start_ms"),
                    landing=Landing.from_json(s.get("landing")),
                    bytes=int(s.get("bytes", 0)),  # records written before it was kept have none
                    millis_behind_latest=s.get("millis_behind_latest"),
                )
                for s in body["shards"]
            ),
            cost=ReadCost.from_json(body.get("cost")),
        )


__all__ = ["CommitRecord", "ShardCommit"]
