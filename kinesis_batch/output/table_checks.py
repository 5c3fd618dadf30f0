"""The one-line checks a table sink (delta, iceberg) makes before it writes: that the bucket is
there, and that an existing table has the columns the run's rows need."""

from __future__ import annotations

import pyarrow as pa

from kinesis_batch.columns import BATCH_ID, CHANGE_POSITION, METADATA, RAW, ROW_SCHEMA, Columns, fields_of
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.output.evolve import conflicts, normalize, normalized
from kinesis_batch.storage.place import Place


def check_schema(actual: pa.Schema, what: str, columns: Columns = RAW, *, derived: str | None = None) -> list[pa.Field]:
    """One line naming the difference when an existing table does not have the columns
    ``columns`` needs (``derived``: the partition column of the table's layout, which the files
    do not hold); for decoded rows, the fields it still has to get (metadata columns of a
    table the user made, declared fields it lacks)."""
    if derived is not None:
        actual = pa.schema([field for field in actual if field.name != derived])
    if columns.fixed is not None:
        _check_fixed(actual, what, columns.schema(batch_column=True))
        return []
    if CHANGE_POSITION.name in actual.names and not columns.changes:
        raise InvalidStateError(f"{what} is a table of current state (made with --changes): run with its --changes")
    have = normalize(actual)
    names = set(have.names)
    if "data" in names and names >= set(ROW_SCHEMA.names):
        raise InvalidStateError(
            f"{what} holds raw rows (a data column of record bytes); decoded rows need a table of their own"
        )
    wrong = [
        f"{field.name} is {have.field(field.name).type}, not {field.type}"
        for field in METADATA.append(BATCH_ID)
        if field.name in names and have.field(field.name).type != field.type
    ]
    declared = columns.fields or pa.schema([])
    wrong += conflicts(fields_of(have), declared)
    if wrong:
        raise InvalidStateError(f"{what} has columns that conflict with the decoded rows ({'; '.join(wrong)})")
    wanted = columns.schema(batch_column=True)
    return [field for field in wanted if field.name not in names]


def _check_fixed(actual: pa.Schema, what: str, expected: pa.Schema) -> None:
    have = {field.name: field.type for field in actual}
    problems = [
        f"{field.name} is {have[field.name]}, not {field.type}" if field.name in have else f"{field.name} is missing"
        for field in expected
        if have.get(field.name) != field.type and normalized(have.get(field.name) or pa.null()) != field.type
    ]
    extra = sorted(set(have) - set(expected.names))
    if extra:
        problems.append(f"unexpected column(s) {', '.join(extra)}")
    if problems:
        raise InvalidStateError(
            f"{what} exists with other columns than kinesis-batch writes ({'; '.join(problems)}); "
            "choose another table or output"
        )


def check_bucket(root: Place) -> None:
    """A missing or unreadable bucket, said in one line before anything is written (asked within
    ``root``: a policy holds the output to its own prefix)."""
    if not root.bucket_exists():
        bucket = root.path.split("/", 1)[0]
        raise InvalidStateError(f"--output {root.uri}: bucket {bucket} does not exist (or is not visible to us)")


__all__ = ["check_bucket", "check_schema"]
