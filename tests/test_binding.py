"""Which output a lease table publishes to: the pure check, as a table of cases, and the mark's
attributes and move items as DynamoDB (moto) keeps them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kinesis_batch.binding import OutputMove, Outputs, check, moves
from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.config import KEEP, MOVE, NONE
from kinesis_batch.errors import ForeignOutputError
from kinesis_batch.ownership.table_mark import TableMark, read_mark, write_mark

NOW = datetime(2026, 11, 25, tzinfo=UTC)


def mark(output: str | None, dead: str | None = None) -> TableMark:
    return TableMark("s", "arn:s", NOW, NOW, "created", 1, output, dead)


A, B = "file:///lake/a", "file:///lake/b"
CASES = [
    ("a new table", None, Outputs(A), KEEP, ""),
    ("a table made before outputs were recorded", mark(None), Outputs(A), KEEP, ""),
    ("the same output", mark(A), Outputs(A), KEEP, ""),
    ("another output", mark(A), Outputs(B), KEEP, f"publishes to {A}, not {B}"),
    ("another output, moved on purpose", mark(A), Outputs(B), MOVE, ""),
    ("another output, by a backfill of the main checkpoints", mark(A), Outputs(B), NONE, ""),
    ("its first dead-letter output", mark(A), Outputs(A, B), KEEP, ""),
    ("another dead-letter output", mark(A, A + "_dl"), Outputs(A, B), KEEP, f"publishes to {A}_dl, not {B}"),
    ("a raw run after decoding ones", mark(A, A + "_dl"), Outputs(A), KEEP, ""),
]


@pytest.mark.parametrize(
    ("seen", "outputs", "binding", "refused"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_a_run_publishes_only_to_the_output_its_lease_table_records_unless_it_moves_it(
    seen: TableMark | None, outputs: Outputs, binding: str, refused: str
) -> None:
    if not refused:
        check(seen, outputs, "t", binding=binding)
        return
    with pytest.raises(ForeignOutputError) as error:
        check(seen, outputs, "t", binding=binding)
    line = str(error.value)
    assert refused in line and "--move-output" in line and "\n" not in line


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
