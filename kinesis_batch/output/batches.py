"""Atomic publish of a batch's output under the output root (local and HDFS-like file systems).

Layout (readers ignore paths that start with ``_``)::

    ROOT/_staging/<batch>/            part-<shard>-<attempt>.parquet from the Spark tasks, _results/,
                                      _plan.json, and _commit.json once the batch is complete
    ROOT/batch_id=<batch>/            the published batch (hive-style: readers get a batch_id column)
    ROOT/_discarded/<batch>-<nonce>/  a staging that lost (deleted right after)

Contract:
- :meth:`BatchOutput.publish` is one ``rename`` of the staging directory: all of the batch
  becomes visible at once, or none of it. Publishing a published batch is a no-op.
- The commit record (per shard: start, end, records, SHARD_END reached) is written into the
  staging directory before the rename, so a published batch always carries it.
- :meth:`BatchOutput.discard` is also a ``rename`` of the staging directory, so when a run
  publishes while another worker's recovery discards the same batch, exactly one of the two
  renames succeeds and both learn which.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kinesis_batch.checkpoints.model import Checkpoint
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError

COMMIT_RECORD = "_commit.json"
MANIFEST = "_plan.json"


@dataclass(frozen=True)
class ShardCommit:
    shard_id: str
    start: Checkpoint
    end: Checkpoint
    records: int
    reached_shard_end: bool
    trimmed_after: str | None = None  # retention had trimmed past ``start`` (read with --allow-gaps)


@dataclass(frozen=True)
class CommitRecord:
    batch_id: str
    run_id: str
    stream: str
    created_at: datetime
    shards: tuple[ShardCommit, ...]

    def shard(self, shard_id: str) -> ShardCommit | None:
        return next((s for s in self.shards if s.shard_id == shard_id), None)

    def to_json(self) -> str:
        body: dict[str, Any] = asdict(self)
        body["created_at"] = self.created_at.isoformat()
        body["shards"] = [{**asdict(s), "start": s.start.to_json(), "end": s.end.to_json()} for s in self.shards]
        return json.dumps(body, indent=1, sort_keys=True)

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
                )
                for s in body["shards"]
            ),
        )


class BatchOutput:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def staging(self, batch_id: str) -> Path:
        return self.root / "_staging" / _safe(batch_id)

    def published(self, batch_id: str) -> Path:
        return self.root / f"batch_id={_safe(batch_id)}"

    def check_writable(self) -> None:
        """Create the root if needed and prove we can write in it, or say why not."""
        try:
            (self.root / "_staging").mkdir(parents=True, exist_ok=True)
            probe = self.root / "_staging" / f".probe-{uuid.uuid4().hex}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise InvalidStateError(f"output root {self.root} is not writable: {exc.strerror or exc}") from exc

    def write_commit_record(self, record: CommitRecord) -> None:
        """Write the record into the staging directory (atomically: temp file, then rename)."""
        write_atomically(self.staging(record.batch_id) / COMMIT_RECORD, record.to_json())

    def write_manifest(self, batch_id: str, body: dict[str, Any]) -> None:
        """The run's plan, for steps that run in other processes (Airflow tasks)."""
        write_atomically(self.staging(batch_id) / MANIFEST, json.dumps(body, indent=1, sort_keys=True))

    def read_manifest(self, batch_id: str) -> dict[str, Any] | None:
        """The run's plan, from its staging or (once published) from the batch."""
        for folder in (self.staging(batch_id), self.published(batch_id)):
            try:
                body: dict[str, Any] = json.loads((folder / MANIFEST).read_text())
                return body
            except (FileNotFoundError, NotADirectoryError):
                continue
        return None

    def clear_staged_rows(self, batch_id: str) -> None:
        """Forget what an earlier attempt of the read step wrote (rows and results), keep the plan."""
        staging = self.staging(batch_id)
        if not staging.exists():
            return
        for path in staging.iterdir():
            if path.name == MANIFEST:
                continue
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()

    def keep_only(self, batch_id: str, files: set[str]) -> None:
        """Delete the staged Parquet files (finished or partial) not in ``files``: what failed or
        lost task attempts left. Called before the commit record is written."""
        for path in self.staging(batch_id).glob("*part-*"):
            if path.is_file() and path.name not in files:
                path.unlink(missing_ok=True)

    def publish(self, batch_id: str) -> bool:
        """Make the staged batch visible. True if this call published it, False if it already was.

        Raises InvalidStateError when the staging is gone and nothing is published (another
        worker discarded it: this run lost its lease) or when it has no commit record.
        """
        staging, published = self.staging(batch_id), self.published(batch_id)
        if published.exists():
            return False
        if not (staging / COMMIT_RECORD).exists():
            raise InvalidStateError(f"batch {batch_id} has no staged output with a commit record to publish")
        try:
            os.rename(staging, published)
        except FileNotFoundError:
            if published.exists():
                return False
            raise InvalidStateError(f"batch {batch_id} was discarded before it could be published") from None
        except OSError as exc:
            if published.exists():
                return False
            raise InvalidStateError(f"cannot publish batch {batch_id}: {exc}") from exc
        return True

    def discard(self, batch_id: str) -> bool:
        """Remove an unpublished batch's staging. True if this call removed it."""
        staging = self.staging(batch_id)
        if not staging.exists():
            return False
        graveyard = self.root / "_discarded"
        graveyard.mkdir(parents=True, exist_ok=True)
        target = graveyard / f"{_safe(batch_id)}-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(staging, target)
        except FileNotFoundError:
            return False
        shutil.rmtree(target, ignore_errors=True)
        return True

    def commit_record(self, batch_id: str) -> CommitRecord | None:
        """The record of a published batch, or None if the batch is not published."""
        path = self.published(batch_id) / COMMIT_RECORD
        try:
            return CommitRecord.from_json(path.read_text())
        except (FileNotFoundError, NotADirectoryError):
            return None

    def published_batches(self) -> list[str]:
        if not self.root.exists():
            return []
        return sorted(p.name.split("=", 1)[1] for p in self.root.glob("batch_id=*") if p.is_dir())


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one: write a hidden temporary, then rename it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    temporary.write_text(text)
    temporary.replace(path)


def _safe(batch_id: str) -> str:
    if not batch_id or "/" in batch_id or batch_id.startswith((".", "_")):
        raise IllegalArgumentError(f"unusable batch id {batch_id!r}")
    return batch_id
