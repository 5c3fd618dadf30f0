"""Promise 5: data lost to retention fails the run loudly, or (opt-in) is recorded; old backlogs warn."""

from __future__ import annotations

import pytest

from kinesis_batch import TrimmedDataError
from kinesis_batch.cli import build_parser
from kinesis_batch.run.retention import check_gaps, warn_if_at_risk


def test_a_gap_fails_the_run_naming_shard_and_checkpoint() -> None:
    messages: list[str] = []
    check_gaps({"shardId-1": None}, allow_gaps=False, progress=messages.append)  # no gap: nothing happens
    with pytest.raises(TrimmedDataError, match=r"shardId-2 after 4968.*--allow-gaps"):
        check_gaps({"shardId-1": None, "shardId-2": "4968"}, allow_gaps=False, progress=messages.append)
    assert messages == []


def test_a_gap_with_allow_gaps_is_recorded_loudly_not_silently() -> None:
    messages: list[str] = []
    check_gaps({"shardId-2": "4968"}, allow_gaps=True, progress=messages.append)
    assert messages == [
        "WARNING: records lost to retention (shardId-2 after 4968); recorded in the batch's commit record"
    ]


def test_a_backlog_older_than_half_the_retention_warns() -> None:
    messages: list[str] = []
    warn_if_at_risk("shardId-1", 11 * 3_600_000, 24, messages.append)
    assert messages == []
    warn_if_at_risk("shardId-1", 13 * 3_600_000, 24, messages.append)
    (warning,) = messages
    assert warning.startswith("WARNING: shardId-1's backlog was 13.0 h old when read, retention is 24 h")


def test_allow_gaps_is_an_explicit_opt_in_on_the_command_line() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", "--stream", "s", "--output", "o"]).allow_gaps is False
    assert parser.parse_args(["run", "--stream", "s", "--output", "o", "--allow-gaps"]).allow_gaps is True
