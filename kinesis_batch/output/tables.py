"""What the table sinks (delta, iceberg) share: the columns, the marker, and the one-line checks
of bucket and schema."""

from __future__ import annotations

import pyarrow as pa

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.output.place import Place
from kinesis_batch.output.records import CommitRecord

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


__all__ = ["BATCH_ID", "COMMIT_ATTEMPTS", "ROW_SCHEMA", "check_bucket", "check_schema", "marker", "table_schema"]
