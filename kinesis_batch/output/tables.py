"""What the table sinks (delta, iceberg) share: the columns, the marker, the one-line checks of
bucket and schema, and publish and discard as one check-then-commit protocol (:class:`TableSink`)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import pyarrow as pa

from kinesis_batch.errors import DependencyError, InvalidStateError, KinesisBatchError
from kinesis_batch.output.place import Place
from kinesis_batch.output.records import CommitRecord
from kinesis_batch.output.sink import Sink, discarded

PUBLISH, DISCARD = "publish", "discard"

#: Concurrent commits of one consumer (runs on disjoint shards) each reload and try again.
COMMIT_ATTEMPTS = 20

#: The rows the Spark tasks write. Sequence numbers stay strings: up to 129 digits, past any
#: decimal type. Every column is nullable, as Arrow's schema is (a required Iceberg column
#: would refuse the tasks' files).
ROW_SCHEMA = pa.schema(
    [
        ("shard_id", pa.string()),
        ("sequence_number", pa.string()),
        ("sub_sequence_number", pa.int64()),
        ("partition_key", pa.string()),
        ("data", pa.binary()),
        ("approximate_arrival_timestamp", pa.timestamp("us", tz="UTC")),
        ("lineage_depth", pa.int32()),
    ]
)
BATCH_ID = pa.field("batch_id", pa.string())


def table_schema() -> pa.Schema:
    """A table's columns: the rows plus ``batch_id`` as a plain column (the parquet sink has it
    from its folder names instead)."""
    return ROW_SCHEMA.append(BATCH_ID)


def check_schema(actual: pa.Schema, what: str) -> None:
    """One line naming the difference when an existing table does not have our columns."""
    expected = table_schema()
    have = {field.name: field.type for field in actual}
    problems = [
        f"{field.name} is {have[field.name]}, not {field.type}" if field.name in have else f"{field.name} is missing"
        for field in expected
        if have.get(field.name) != field.type and not _same_type(have.get(field.name), field.type)
    ]
    extra = sorted(set(have) - set(expected.names))
    if extra:
        problems.append(f"unexpected column(s) {', '.join(extra)}")
    if problems:
        raise InvalidStateError(
            f"{what} exists with other columns than kinesis-batch writes ({'; '.join(problems)}); "
            "choose another table or output"
        )


def _same_type(have: pa.DataType | None, want: pa.DataType) -> bool:
    """Types the formats hand back under another Arrow name for the same column type."""
    if have is None:
        return False
    if pa.types.is_timestamp(want):
        return pa.types.is_timestamp(have) and have.tz is not None
    same = {
        pa.string(): (pa.large_string(), pa.string_view()),
        pa.binary(): (pa.large_binary(), pa.binary_view()),
    }
    return have in same.get(want, ())


def check_bucket(root: Place) -> None:
    """A missing or unreadable bucket, said in one line before anything is written."""
    bucket = Place(f"s3://{root.path.split('/', 1)[0]}", root.s3)
    if not bucket.exists():
        raise InvalidStateError(f"--output {root.uri}: bucket {bucket.path} does not exist (or is not visible to us)")


def marker(app: str, stream: str, batch_id: str, action: str, record: CommitRecord | None) -> dict[str, str]:
    """What a commit of ours carries in its metadata (Delta) or snapshot summary (Iceberg)."""
    body = {
        "kinesis_batch.app": app,
        "kinesis_batch.stream": stream,
        "kinesis_batch.batch_id": batch_id,
        "kinesis_batch.action": action,
    }
    if record is not None:
        body |= {"kinesis_batch.run_id": record.run_id, "kinesis_batch.commit_record": record.to_json(indent=None)}
    return body


class TableSink(Sink):
    """Publish and discard on a table format whose commits carry our marker.

    Both load the table, read what its markers say of the batch, and commit through that same
    handle; the format makes a commit fail when a commit of ours landed since the handle was
    loaded (:meth:`_commit` returns False), and then we reload and decide again. So a late
    publish and another worker's discard of one batch serialise, and the second gives way. A
    discard commits its marker before it deletes a file, so a publish that finds a file gone
    finds the discard's marker too.
    """

    @abstractmethod
    def _load(self) -> Any:
        """A freshly loaded table handle."""

    @abstractmethod
    def _state(self, table: Any, batch_id: str) -> str | None:
        """PUBLISH, DISCARD or None: what the table's markers say of the batch."""

    @abstractmethod
    def _files(self, record: CommitRecord, files: list[str]) -> list[Any]:
        """What the batch's commit adds for ``files``, each checked to be there."""

    def _staged(self, batch_id: str, files: list[str]) -> dict[str, int]:
        """Sizes of ``files``, each checked to be there (a table must never name a missing file),
        after deleting what other attempts left."""
        sizes = self.keep_only(batch_id, set(files))
        missing = sorted(set(files) - set(sizes))
        if missing:
            raise InvalidStateError(f"batch {batch_id}: {len(missing)} staged file(s) are missing, e.g. {missing[0]}")
        return sizes

    @abstractmethod
    def _commit(self, table: Any, batch_id: str, files: list[Any], record: CommitRecord | None) -> bool:
        """One commit through ``table`` with the batch's marker (publish with ``record``; without
        it, a discard's marker alone). False when the table moved since ``table`` was loaded."""

    def publish(self, record: CommitRecord, files: list[str]) -> bool:
        batch_id = record.batch_id
        added: list[Any] | None = None
        for _ in range(COMMIT_ATTEMPTS):
            table = self._load()
            state = self._state(table, batch_id)
            if state == PUBLISH:
                return False
            if state == DISCARD:
                raise discarded(batch_id)
            try:
                added = added if added is not None else self._files(record, files)
                done = self._commit(table, batch_id, added, record)
            except KinesisBatchError:  # a file went missing: did another worker discard the batch?
                if self._state(self._load(), batch_id) == DISCARD:
                    raise discarded(batch_id) from None
                raise
            if done:
                self.staging(batch_id).delete_all()
                return True
        raise DependencyError(f"could not commit batch {batch_id} to {self.uri}: {COMMIT_ATTEMPTS} conflicts in a row")

    def discard(self, batch_id: str, *, fence: bool = True) -> bool:
        if not (self.staging(batch_id).exists() or self.data(batch_id).exists()):
            return False  # nothing staged, so nothing a late publish could commit
        for _ in range(COMMIT_ATTEMPTS):
            table = self._load()
            state = self._state(table, batch_id)
            if state == PUBLISH:
                self.staging(batch_id).delete_all()
                return False
            if state == DISCARD or not fence or self._commit(table, batch_id, [], None):
                break
        else:
            raise DependencyError(f"could not discard batch {batch_id} in {self.uri}: {COMMIT_ATTEMPTS} conflicts")
        self.data(batch_id).delete_all()
        self.staging(batch_id).delete_all()
        return True


__all__ = [
    "BATCH_ID",
    "COMMIT_ATTEMPTS",
    "DISCARD",
    "PUBLISH",
    "ROW_SCHEMA",
    "TableSink",
    "check_bucket",
    "check_schema",
    "marker",
    "table_schema",
]
