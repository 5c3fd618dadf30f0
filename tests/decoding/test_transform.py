"""A user's transform: loaded once (a bad name is one line at start), run over a page, and
again record by record when it fails, so only the records it fails on are dead letters."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from kinesis_batch.decoding.transform import apply, load
from kinesis_batch.errors import IllegalArgumentError
from tests.decoding import transforms


def page(ids: list[int]) -> tuple[pa.RecordBatch, list[int]]:
    at = datetime(2026, 11, 25, tzinfo=UTC)
    batch = pa.RecordBatch.from_pydict(
        {
            "shard_id": ["s"] * len(ids),
            "sequence_number": [str(1000 + i) for i in range(len(ids))],
            "sub_sequence_number": [0] * len(ids),
            "partition_key": ["k"] * len(ids),
            "approximate_arrival_timestamp": [at] * len(ids),
            "lineage_depth": [0] * len(ids),
            "id": ids,
            "qty": [i * 3 for i in ids],
        }
    )
    return batch, list(range(len(ids)))


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("tests.decoding.transforms", "give module:function"),
        ("no_such_module:f", "cannot import no_such_module"),
        ("tests.decoding.transforms:nothing", "has no function nothing"),
        ("tests.decoding.transforms:pc", "has no function pc"),
    ],
)
def test_a_transform_that_cannot_be_had_is_one_line(spec: str, says: str) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        load(spec)


def test_rows_keep_their_record_and_a_filtered_record_makes_none() -> None:
    batch, positions = page([1, 2, 5, 4])
    done = apply(load("tests.decoding.transforms:rename_and_derive"), batch, positions)
    assert done.rows.schema.names[-3:] == ["order_id", "qty", "big"] and done.positions == [0, 1, 2, 3]
    done = apply(transforms.drop_odd, batch, positions)
    assert done.positions == [1, 3] and not done.rejects


def test_a_page_the_transform_fails_on_is_run_record_by_record() -> None:
    batch, positions = page([5, 7, 9])
    done = apply(transforms.fail_on_seven, batch, positions)
    assert done.rows.column("id").to_pylist() == [5, 9] and done.positions == [0, 2]
    (reject,) = done.rejects
    assert (reject.position, reject.stage, reject.kind) == (1, "transform", "transform failed")
    assert "seven is not allowed" in reject.detail


def test_rows_that_lost_their_record_key_are_rejected_with_the_reason() -> None:
    batch, positions = page([1])
    done = apply(transforms.lose_the_key, batch, positions)
    assert done.rows.num_rows == 0
    assert "keep them, they name each row's record" in done.rejects[0].detail
