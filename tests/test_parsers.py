"""What the user types, parsed or refused in one line naming the setting (table of cases)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.parsers import (
    parse_initial_position,
    parse_time,
    validate_run_id,
    validate_small_file_mb,
    validate_stream_name,
    validate_table_name,
)
from kinesis_batch.shards.checkpoint import Checkpoint


@pytest.mark.parametrize(
    ("text", "checkpoint"),
    [
        ("trim_horizon", Checkpoint.trim_horizon()),
        ("LATEST", Checkpoint.latest()),
        ("at_timestamp=2026-11-25T03:00:00Z", Checkpoint.at_timestamp(datetime(2026, 11, 25, 3, tzinfo=UTC))),
    ],
)
def test_an_initial_position_is_parsed(text: str, checkpoint: Checkpoint) -> None:
    assert parse_initial_position(text) == checkpoint


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("2026-11-25T03:00:00Z", datetime(2026, 11, 25, 3, tzinfo=UTC)),
        ("2026-11-25T03:00:00", datetime(2026, 11, 25, 3, tzinfo=UTC)),  # no zone: UTC
        ("2026-11-25T04:00:00+01:00", datetime(2026, 11, 25, 3, tzinfo=UTC)),
    ],
)
def test_a_time_is_read_in_utc(text: str, at: datetime) -> None:
    assert parse_time(text) == at


@pytest.mark.parametrize(
    ("parse", "text", "says"),
    [
        (parse_initial_position, "yesterday", "yesterday"),
        (parse_initial_position, "latest=now", "latest=now"),
        (lambda text: parse_time(text, setting="--until"), "tomorrow", "--until: 'tomorrow' is not an ISO 8601 time"),
        (validate_stream_name, "", "--stream: '' is not a Kinesis stream name"),
        (validate_table_name, "ab", "--table: 'ab' is not a DynamoDB table name"),
        (validate_run_id, ".hidden", "--run-id: '.hidden' is not a run id"),
        (validate_run_id, "a/b", "--run-id: 'a/b' is not a run id"),
        (lambda mb: validate_small_file_mb(mb, setting="small_file_mb"), -1, "small_file_mb: -1 is not 0 or more"),
    ],
)
def test_what_does_not_parse_is_one_line_naming_the_setting(parse: object, text: object, says: str) -> None:
    with pytest.raises(IllegalArgumentError) as refused:
        parse(text)  # type: ignore[operator]
    assert says in str(refused.value)
