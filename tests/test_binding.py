"""Which output a lease table publishes to: the pure check, as a table of cases, and the mark's
attributes and move items as DynamoDB (moto) keeps them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kinesis_batch import Checkpoint, Lease
from kinesis_batch.binding import OutputMove, Outputs, check, moves, progressed
from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.config import KEEP, MOVE, NONE
from kinesis_batch.errors import ForeignOutputError
from kinesis_batch.ownership.table_mark import TableMark, read_mark, write_mark

NOW = datetime(2026, 11, 25, tzinfo=UTC)


def mark(output: str | None, dead: str | None = None) -> TableMark:
    return TableMark("s", "arn:s", NOW, NOW, "created", 1, output, dead)


A, B = "file:///lake/a", "file:///lake/b"
CASES = [
    ("a new table", None, Outputs(A), KEEP, True, ""),
    ("a table made before outputs were recorded", mark(None), Outputs(A), KEEP, True, ""),
    ("the same output", mark(A), Outputs(A), KEEP, True, ""),
    ("another output", mark(A), Outputs(B), KEEP, True, f"publishes to {A}, not {B}"),
    ("another output, where nothing was ever published", mark(A), Outputs(B), KEEP, False, ""),
    ("another output, moved on purpose", mark(A), Outputs(B), MOVE, True, ""),
    ("another output, by a backfill of the main checkpoints", mark(A), Outputs(B), NONE, True, ""),
    ("its first dead-letter output", mark(A), Outputs(A, B), KEEP, True, ""),
    ("another dead-letter output", mark(A, A + "_dl"), Outputs(A, B), KEEP, True, f"publishes to {A}_dl, not {B}"),
    ("a raw run after decoding ones", mark(A, A + "_dl"), Outputs(A), KEEP, True, ""),
]


@pytest.mark.parametrize(
    ("seen", "outputs", "binding", "progressed", "refused"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_run_publishes_only_to_the_output_its_lease_table_records_unless_it_moves_it(
    seen: TableMark | None, outputs: Outputs, binding: str, progressed: bool, refused: str
) -> None:
    if not refused:
        check(seen, outputs, "t", binding=binding, progressed=progressed)
        return
    with pytest.raises(ForeignOutputError) as error:
        check(seen, outputs, "t", binding=binding, progressed=progressed)
    line = str(error.value)
    assert refused in line and "--move-output" in line and "\n" not in line


SEQUENCE = Checkpoint.at("49590338271490256608559692538361571095921575989136588898")


@pytest.mark.parametrize(
    ("leases", "expected"),
    [
        ([], False),
        ([Lease("a", checkpoint=Checkpoint.trim_horizon()), Lease("b", checkpoint=Checkpoint.latest())], False),
        ([Lease("a", checkpoint=Checkpoint.at_timestamp(NOW)), Lease("b")], False),
        ([Lease("a", checkpoint=Checkpoint.trim_horizon()), Lease("b", checkpoint=SEQUENCE)], True),
        ([Lease("a", checkpoint=Checkpoint.shard_end())], True),
        ([Lease("a", checkpoint=Checkpoint.trim_horizon(), pending_batch_id="run-1")], True),  # may be published
    ],
    ids=["no leases", "start sentinels", "a timestamp start", "a sequence number", "shard end", "a pending batch"],
)
def test_an_output_may_hold_something_once_a_checkpoint_moved_or_a_batch_is_pending(
    leases: list[Lease], expected: bool
) -> None:
    assert progressed(leases) is expected


def test_a_marks_outputs_and_a_move_are_kept_in_the_history_table(dynamodb: Any) -> None:
    history = HistoryTable(dynamodb, "bound")
    history.create_if_not_exists()
    assert write_mark(history, mark(A, A + "_dl"))
    assert read_mark(history) == mark(A, A + "_dl")
    assert write_mark(history, mark(None), replacing=mark(A)) is True  # same markedAt: the condition holds
    assert read_mark(history) == mark(None), "a mark without outputs reads back without them"

    move = OutputMove(NOW, "worker", A, B, {"shardId-000000000000": "49612", "shardId-000000000001": "TRIM_HORIZON"})
    dynamodb.put_item(TableName=history.table_name, Item=move.to_item())
    assert moves(history) == [move]
    assert history.for_run("anything") == [], "a move is no run's commit"
