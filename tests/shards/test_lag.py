"""Lag is the age of the oldest unread record; retention risk is judged on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kinesis_batch.shards.checkpoint import Checkpoint
from kinesis_batch.shards.lag import RetentionRisk, ShardLag, shard_lag
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.listing import list_shards
from kinesis_batch.shards.positions import StartPosition
from kinesis_batch.shards.reader import ShardReader
from tests.faults import FaultyKinesis
from tests.streams import put

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("lag_hours", "retention_hours", "trimmed", "risk"),
    [
        (0, 24, False, RetentionRisk.OK),
        (11.9, 24, False, RetentionRisk.OK),
        (12, 24, False, RetentionRisk.AT_RISK),
        (21.5, 24, False, RetentionRisk.AT_RISK),
        (21.6, 24, False, RetentionRisk.CRITICAL),
        (30, 24, False, RetentionRisk.CRITICAL),
        (0, 24, True, RetentionRisk.LOST),
        (100, 168, False, RetentionRisk.AT_RISK),
    ],
)
def test_retention_risk_by_share_of_the_retention_period(
    lag_hours: float, retention_hours: int, trimmed: bool, risk: RetentionRisk
) -> None:
    assert RetentionRisk.judge(lag_hours * 3600, retention_hours, trimmed=trimmed) is risk


@pytest.mark.parametrize(
    ("oldest", "lag_seconds"),
    [(None, 0.0), (NOW - timedelta(minutes=90), 5400.0), (NOW + timedelta(seconds=1), 0.0)],
)
def test_lag_seconds_is_the_age_of_the_oldest_unread_record(oldest: datetime | None, lag_seconds: float) -> None:
    # A record stamped slightly in the future (emulator clocks) is no lag, not a negative one.
    assert ShardLag("shardId-0", NOW, oldest, None).lag_seconds == lag_seconds


def _stream_with_records(kinesis: Any, streams: Any, count: int) -> tuple[str, Any, list[Any]]:
    stream = streams.create(shards=1)
    put(kinesis, stream, count)
    (shard,) = list_shards(kinesis, stream)
    records = list(ShardReader(kinesis, stream, shard, StartPosition.trim_horizon(), limits=ReadLimits.unlimited()))
    return stream, shard, records


def test_lag_after_a_checkpoint_is_measured_from_the_next_records_arrival(kinesis: Any, streams: Any) -> None:
    stream, shard, records = _stream_with_records(kinesis, streams, 5)
    checkpoint = Checkpoint.at(records[1].sequence_number)
    now = records[2].approximate_arrival_timestamp + timedelta(hours=3)
    lag = shard_lag(kinesis, stream, shard, checkpoint, now)
    assert lag.oldest_unread_at == records[2].approximate_arrival_timestamp
    assert lag.lag_seconds == pytest.approx(3 * 3600)
    assert lag.risk(24) is RetentionRisk.OK and lag.risk(5) is RetentionRisk.AT_RISK


@pytest.mark.parametrize("where", ["last record", "shard end", "latest"])
def test_a_caught_up_shard_has_no_lag(kinesis: Any, streams: Any, where: str) -> None:
    stream, shard, records = _stream_with_records(kinesis, streams, 3)
    checkpoint = {
        "last record": Checkpoint.at(records[-1].sequence_number),
        "shard end": Checkpoint.shard_end(),
        "latest": Checkpoint.latest(),
    }[where]
    lag = shard_lag(kinesis, stream, shard, checkpoint, datetime.now(UTC) + timedelta(days=1))
    assert (lag.oldest_unread_at, lag.lag_seconds, lag.trimmed) == (None, 0.0, False)


def test_an_unread_shard_lags_by_its_oldest_record(kinesis: Any, streams: Any) -> None:
    stream, shard, records = _stream_with_records(kinesis, streams, 3)
    lag = shard_lag(kinesis, stream, shard, Checkpoint.trim_horizon(), NOW)
    assert lag.oldest_unread_at == records[0].approximate_arrival_timestamp


def test_a_checkpoint_retention_trimmed_past_is_reported_lost(kinesis: Any, streams: Any) -> None:
    stream, shard, records = _stream_with_records(kinesis, streams, 6)
    checkpoint, first_left = records[2], records[3]

    def trimmed(_n: int, params: dict[str, Any]) -> None:
        # As on AWS once retention passed the checkpoint: the iterator starts at the first record left.
        if params.get("StartingSequenceNumber") == checkpoint.sequence_number:
            params["StartingSequenceNumber"] = first_left.sequence_number

    faulty = FaultyKinesis(kinesis, budget=10).before("get_shard_iterator", trimmed)
    lag = shard_lag(faulty, stream, shard, Checkpoint.at(checkpoint.sequence_number), NOW)
    assert lag.trimmed and lag.risk(24) is RetentionRisk.LOST
    assert lag.oldest_unread_at == first_left.approximate_arrival_timestamp
