"""A run's configuration: the stream's settings plus what belongs to one run, checked when made,
and the same configuration again from its JSON (what the spark-submitted read step gets)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kinesis_batch.config import MOVE, RunConfig
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.shards.checkpoint import Checkpoint


def test_json_gives_the_same_configuration_back() -> None:
    config = RunConfig.of(
        stream="clicks", output="/data/clicks", decode="json", initial_position="latest", shards_per_task=4,
        worker_id="w-1", until=datetime(2026, 11, 25, 3, tzinfo=UTC), output_binding=MOVE, commit_concurrency=2,
    )  # fmt: skip
    assert RunConfig.from_json(config.to_json()) == config


def test_the_run_sees_the_settings_parsed_and_unset_ones_as_none() -> None:
    config = RunConfig.of(stream="clicks", output="/data/clicks", target_file_mb=64)
    assert config.initial_position == Checkpoint.trim_horizon() and config.table == "kinesis-batch-clicks"
    assert (config.shards_per_task, config.partition_by, config.catalog) == (None, None, None)
    assert config.target_bytes == 64 * 1024 * 1024


@pytest.mark.parametrize(
    ("run", "says"),
    [
        ({"until": datetime(2026, 11, 25)}, "--until must carry a time zone"),
        ({"commit_concurrency": 0}, "must be at least 1, not 0"),
        ({"output_binding": "sometimes"}, "output_binding must be one of"),
        ({"worker_id": ""}, "--worker-id must be 1-256 characters"),
    ],
)
def test_a_bad_run_field_is_refused_in_one_line(run: dict[str, Any], says: str) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        RunConfig.of(stream="clicks", output="/data/clicks", **run)
