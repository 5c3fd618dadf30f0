"""Start positions and end bounds are plain values: tables of cases, no I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.shards.model import Record, sequence_key
from kinesis_batch.shards.positions import EndBound, StartKind, StartPosition

T0 = datetime(2026, 11, 22, 3, 0, 0, tzinfo=UTC)
SEQ56 = "49680448449676558164270362024261260818428810667143200770"  # as kinesalite writes them
MAX129 = "9" * 129  # the API allows sequence numbers of up to 129 digits


@pytest.mark.parametrize(
    ("position", "request_args"),
    [
        (StartPosition.trim_horizon(), {"ShardIteratorType": "TRIM_HORIZON"}),
        (StartPosition.latest(), {"ShardIteratorType": "LATEST"}),
        (StartPosition.at_timestamp(T0), {"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": T0}),
        # A checkpoint resumes AT its sequence number: an aggregate may have been read only in part.
        (
            StartPosition.after(SEQ56, 3),
            {"ShardIteratorType": "AT_SEQUENCE_NUMBER", "StartingSequenceNumber": SEQ56},
        ),
        (StartPosition.after("7"), {"ShardIteratorType": "AT_SEQUENCE_NUMBER", "StartingSequenceNumber": "7"}),
        (StartPosition.after(MAX129), {"ShardIteratorType": "AT_SEQUENCE_NUMBER", "StartingSequenceNumber": MAX129}),
    ],
    ids=["trim_horizon", "latest", "at_timestamp", "after_aggregate", "after_small", "after_max129_digits"],
)
def test_iterator_request_per_kind(position: StartPosition, request_args: dict[str, Any]) -> None:
    assert position.iterator_request() == request_args


@pytest.mark.parametrize(
    ("position", "skip"),
    [
        (StartPosition.trim_horizon(), None),
        (StartPosition.latest(), None),
        (StartPosition.at_timestamp(T0), None),
        (StartPosition.after(SEQ56), (int(SEQ56), 0)),
        (StartPosition.after(SEQ56, 4), (int(SEQ56), 4)),
    ],
)
def test_skip_through_is_the_checkpoint_as_integers(position: StartPosition, skip: tuple[int, int] | None) -> None:
    assert position.skip_through() == skip


def test_at_timestamp_keeps_a_non_utc_zone_as_the_same_instant() -> None:
    plus_two = T0.astimezone(timezone(timedelta(hours=2)))
    assert StartPosition.at_timestamp(plus_two).iterator_request()["Timestamp"] == T0


@pytest.mark.parametrize(
    "build",
    [
        lambda: StartPosition(StartKind.AFTER),
        lambda: StartPosition.after(""),
        lambda: StartPosition.after("abc"),
        lambda: StartPosition.after("-1"),
        lambda: StartPosition.after("+1"),
        lambda: StartPosition.after("1e5"),
        lambda: StartPosition.after(" 12"),
        lambda: StartPosition.after("١٢٣"),  # Arabic-Indic digits: isdigit() but not a sequence number
        lambda: StartPosition.after("1" + "0" * 129),
        lambda: StartPosition.after(12345),  # type: ignore[arg-type]
        lambda: StartPosition.after(SEQ56, -1),
        lambda: StartPosition.after(SEQ56, "1"),  # type: ignore[arg-type]
        lambda: StartPosition.after(SEQ56, True),
        lambda: StartPosition("AFTER", SEQ56),  # type: ignore[arg-type]
        lambda: StartPosition(StartKind.TRIM_HORIZON, SEQ56),
        lambda: StartPosition(StartKind.LATEST, sub_sequence_number=2),
        lambda: StartPosition(StartKind.AFTER, SEQ56, timestamp=T0),
        lambda: StartPosition.at_timestamp(datetime(2026, 11, 22, 3, 0, 0)),  # naive
        lambda: StartPosition(StartKind.AT_TIMESTAMP),
        lambda: EndBound(sequence_number="12a"),
        lambda: EndBound(sequence_number="1" * 130),
        lambda: EndBound(until=datetime(2026, 11, 22)),  # naive
        lambda: sequence_key("0x1f"),
    ],
    ids=[
        "after_without_sequence",
        "after_empty",
        "after_letters",
        "after_negative",
        "after_plus_sign",
        "after_exponent",
        "after_space",
        "after_non_ascii_digits",
        "after_longer_than_129_digits",
        "after_int_not_str",
        "after_negative_sub_sequence",
        "after_sub_sequence_as_text",
        "after_sub_sequence_as_bool",
        "kind_as_text",
        "trim_horizon_with_sequence",
        "latest_with_sub_sequence",
        "after_with_timestamp",
        "at_timestamp_naive",
        "at_timestamp_missing",
        "end_letters",
        "end_longer_than_129_digits",
        "end_naive_until",
        "sequence_key_hex",
    ],
)
def test_invalid_input_raises_illegal_argument(build: Any) -> None:
    with pytest.raises(IllegalArgumentError):
        build()


def test_illegal_argument_is_a_value_error_for_callers_that_expect_one() -> None:
    with pytest.raises(ValueError, match="sequence number"):
        StartPosition.after("nope")


SEQ_A = "49680448449676558164270362024261260818428810667143200770"
SEQ_B = "49680448449676558164270362024262469744248425296317906946"  # SEQ_A < SEQ_B


@pytest.mark.parametrize(
    ("bound", "sequence_number", "arrival", "excluded"),
    [
        (EndBound(), SEQ_B, T0 + timedelta(days=999), False),
        # sequence bound is inclusive
        (EndBound(sequence_number=SEQ_A), SEQ_A, T0, False),
        (EndBound(sequence_number=SEQ_A), SEQ_B, T0, True),
        (EndBound(sequence_number=SEQ_B), SEQ_A, T0, False),
        # compared as integers, not text: as text "9" > "10" and a 55-digit "99..." > a 56-digit "4..."
        (EndBound(sequence_number="10"), "9", T0, False),
        (EndBound(sequence_number="9"), "10", T0, True),
        (EndBound(sequence_number="9" * 55), SEQ_A, T0, True),
        (EndBound(sequence_number=SEQ_A), "9" * 55, T0, False),
        # the end time is inclusive too
        (EndBound(until=T0), SEQ_A, T0, False),
        (EndBound(until=T0), SEQ_A, T0 - timedelta(milliseconds=1), False),
        (EndBound(until=T0), SEQ_A, T0 + timedelta(milliseconds=1), True),
        (EndBound(until=T0.astimezone(timezone(timedelta(hours=-5)))), SEQ_A, T0 + timedelta(seconds=1), True),
        # either bound ends the read
        (EndBound(sequence_number=SEQ_B, until=T0), SEQ_A, T0 + timedelta(seconds=1), True),
        (EndBound(sequence_number=SEQ_A, until=T0 + timedelta(days=1)), SEQ_B, T0, True),
        (EndBound(sequence_number=SEQ_B, until=T0 + timedelta(days=1)), SEQ_A, T0, False),
    ],
)
def test_end_bound_excludes(bound: EndBound, sequence_number: str, arrival: datetime, excluded: bool) -> None:
    assert bound.excludes(sequence_number, arrival) is excluded


@pytest.mark.parametrize(
    ("smaller", "larger"),
    [
        (("9", 0), ("10", 0)),
        (("9" * 55, 0), (SEQ_A, 0)),
        ((SEQ_A, 5), (SEQ_B, 0)),
        ((SEQ_A, 0), (SEQ_A, 1)),
        ((SEQ_A, 9), (SEQ_A, 10)),
    ],
)
def test_record_position_orders_by_sequence_integer_then_sub_sequence(
    smaller: tuple[str, int], larger: tuple[str, int]
) -> None:
    def record(seq: str, sub: int) -> Record:
        return Record("shardId-000000000000", seq, sub, "k", b"", T0)

    assert record(*smaller).position < record(*larger).position
