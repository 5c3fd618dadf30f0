"""A log file gone under a loaded Delta table is the table having moved (reload and decide
again), in either wording deltalake gives it, also through our translation (table of cases)."""

from __future__ import annotations

import pytest
from deltalake.exceptions import DeltaError

from kinesis_batch.errors import DependencyError
from kinesis_batch.output.delta_log import log_gone


def translated(cause: BaseException) -> DependencyError:
    try:
        raise DependencyError(f"cannot merge into the Delta table at s3://b/t: {cause}") from cause
    except DependencyError as exc:
        return exc


@pytest.mark.parametrize(
    ("error", "gone"),
    [
        (DeltaError("Object at location s3://b/t/_delta_log/00000000000000000006.json not found"), True),
        (DeltaError("Generic DeltaTable error: Invalid table version: 6"), True),  # a commit's conflict check
        (translated(DeltaError("Invalid table version: 6")), True),
        (DeltaError("Generic DeltaTable error: Schema error: no field named x"), False),
        (ValueError("Invalid table version: 6"), False),  # not deltalake's
    ],
)
def test_a_log_file_gone_is_the_table_moving_in_either_wording(error: BaseException, gone: bool) -> None:
    assert log_gone(error) is gone
