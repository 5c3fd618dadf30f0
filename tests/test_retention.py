"""Promise 5: data lost to retention fails the run loudly, or (opt-in) is recorded; old backlogs warn."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinesis_batch import TrimmedDataError
from kinesis_batch.aws import dynamodb_client, kinesis_client
from kinesis_batch.cli import build_parser
from kinesis_batch.config import RunConfig
from kinesis_batch.run import CatchUpRun


def make_run(tmp_path: Path, messages: list[str], *, allow_gaps: bool) -> CatchUpRun:
    config = RunConfig(stream="s", output=str(tmp_path), allow_gaps=allow_gaps, worker_id="w")
    return CatchUpRun(
        config, kinesis=kinesis_client(), dynamodb=dynamodb_client(), spark=lambda: None, progress=messages.append
    )  # type: ignore[arg-type,return-value]


def test_a_gap_fails_the_run_naming_shard_and_checkpoint(tmp_path: Path) -> None:
    messages: list[str] = []
    run = make_run(tmp_path, messages, allow_gaps=False)
    run._check_gaps({"shardId-1": None})  # no gap: nothing happens
    with pytest.raises(TrimmedDataError, match=r"shardId-2 after 4968.*--allow-gaps"):
        run._check_gaps({"shardId-1": None, "shardId-2": "4968"})


def test_a_gap_with_allow_gaps_is_recorded_loudly_not_silently(tmp_path: Path) -> None:
    messages: list[str] = []
    make_run(tmp_path, messages, allow_gaps=True)._check_gaps({"shardId-2": "4968"})
    assert messages == [
        "WARNING: records lost to retention (shardId-2 after 4968); recorded in the batch's commit record"
    ]


def test_a_backlog_older_than_half_the_retention_warns(tmp_path: Path) -> None:
    messages: list[str] = []
    run = make_run(tmp_path, messages, allow_gaps=False)
    run.retention_hours = 24
    run._warn_about_retention("shardId-1", 11 * 3_600_000)
    assert messages == []
    run._warn_about_retention("shardId-1", 13 * 3_600_000)
    (warning,) = messages
    assert warning.startswith("WARNING: shardId-1's backlog was 13.0 h old when read, retention is 24 h")


def test_allow_gaps_is_an_explicit_opt_in_on_the_command_line() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", "--stream", "s", "--output", "o"]).allow_gaps is False
    assert parser.parse_args(["run", "--stream", "s", "--output", "o", "--allow-gaps"]).allow_gaps is True
