"""Checkpoint values: order, validation of moves, illegal values, where a read resumes (pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from kinesis_batch.errors import CheckpointOrderError, IllegalArgumentError
from kinesis_batch.shards.checkpoint import Checkpoint, Sentinel, validate_move
from kinesis_batch.shards.positions import StartKind, StartPosition

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
T1 = T0 + timedelta(hours=1)

# The API's pattern is 0|([1-9]\d{0,128}): up to 129 decimal digits. AWS and kinesalite send 56.
MAX = "9" * 129
BITS_128 = str(2**128 - 1)  # 39 digits
ABOVE_128_BITS = str(2**128)  # 39 digits, still a valid sequence number
KINESIS_A = "49654729452330913123045372539046218240829120392467759106"  # 56 digits, as AWS sends them
KINESIS_B = "49654729452330913123045372539046218240829120392467759107"
KINESIS_C = "49654729452330913123045372539046218240829120392467759200"
assert len(KINESIS_A) == 56 and len(BITS_128) == 39


def cp(value: str, sub: int = 0) -> Checkpoint:
    return Checkpoint.at(value, sub)


# Ascending: each element is strictly after the previous one.
ASCENDING = [
    ("TRIM_HORIZON", Checkpoint.trim_horizon()),
    ("0", cp("0")),
    ("0.1", cp("0", 1)),
    ("9", cp("9")),
    ("10", cp("10")),  # "9" > "10" as text; 9 < 10 as integers
    ("99", cp("99")),
    ("100.0", cp("100")),
    ("100.5", cp("100", 5)),
    ("101.0", cp("101")),
    ("2**128-1", cp(BITS_128)),
    ("2**128-1.1", cp(BITS_128, 1)),
    ("2**128", cp(ABOVE_128_BITS)),
    ("56 digits", cp(KINESIS_A)),
    ("56 digits.3", cp(KINESIS_A, 3)),
    ("56 digits + 1", cp(KINESIS_B)),
    ("56 digits + 94", cp(KINESIS_C)),
    ("129 nines", cp(MAX)),
    ("129 nines.7", cp(MAX, 7)),
    ("SHARD_END", Checkpoint.shard_end()),
]
ASCENDING_PAIRS = [
    pytest.param(lower, higher, id=f"{lower_id} < {higher_id}")
    for i, (lower_id, lower) in enumerate(ASCENDING)
    for higher_id, higher in ASCENDING[i + 1 :]
]


@pytest.mark.parametrize(("lower", "higher"), ASCENDING_PAIRS)
def test_order_puts_start_sentinels_first_sequence_numbers_as_integers_and_shard_end_last(
    lower: Checkpoint, higher: Checkpoint
) -> None:
    assert lower.order_key() < higher.order_key()


@pytest.mark.parametrize(
    "start",
    [Checkpoint.trim_horizon(), Checkpoint.latest(), Checkpoint.at_timestamp(T0)],
    ids=["TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"],
)
@pytest.mark.parametrize(
    "record",
    [cp("0"), cp("1"), cp(BITS_128), cp(KINESIS_A), cp(MAX, 3)],
    ids=["0", "1", "2**128-1", "56-digits", "max.3"],
)
def test_every_start_sentinel_is_before_every_sequence_number_and_shard_end(
    start: Checkpoint, record: Checkpoint
) -> None:
    assert start.order_key() < record.order_key() < Checkpoint.shard_end().order_key()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param(cp("7"), cp("007"), id="leading zeros"),
        pytest.param(cp(KINESIS_A), cp(KINESIS_A), id="same 56 digits"),
    ],
)
def test_sequence_numbers_of_the_same_integer_have_the_same_order(a: Checkpoint, b: Checkpoint) -> None:
    assert a.order_key() == b.order_key()


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        pytest.param("9", "10", id="9 < 10"),
        pytest.param("99", "100", id="99 < 100"),
        pytest.param("9" * 38, BITS_128, id="38 nines < 2**128-1"),
        pytest.param(BITS_128, ABOVE_128_BITS, id="2**128-1 < 2**128"),
        pytest.param("9" * 55, KINESIS_A, id="55 nines < 56 digits"),
        pytest.param(KINESIS_B, KINESIS_C, id="56 digits"),
        pytest.param(KINESIS_C, "1" + "0" * 56, id="56 digits < 57 digits"),
    ],
)
def test_sequence_numbers_compare_as_integers_not_as_text(lower: str, higher: str) -> None:
    assert cp(lower).order_key() < cp(higher).order_key()
    assert cp(lower).order_key()[0] == int(lower)


# -- validate_move -------------------------------------------------------------------------------


@pytest.mark.parametrize(("current", "new"), ASCENDING_PAIRS)
def test_move_forward_is_allowed(current: Checkpoint, new: Checkpoint) -> None:
    validate_move(current, new)
    validate_move(current, new, read_through=new)
    validate_move(current, new, read_through=Checkpoint.shard_end())


@pytest.mark.parametrize(
    "current",
    [Checkpoint.latest(), Checkpoint.at_timestamp(T0)],
    ids=["LATEST", "AT_TIMESTAMP"],
)
@pytest.mark.parametrize("new", [cp("5"), cp(MAX, 2), Checkpoint.shard_end()], ids=["5", "max.2", "SHARD_END"])
def test_move_from_any_start_position_to_a_record_or_shard_end_is_allowed(current: Checkpoint, new: Checkpoint) -> None:
    validate_move(current, new)


@pytest.mark.parametrize(
    "checkpoint",
    [
        Checkpoint.trim_horizon(),
        Checkpoint.latest(),
        Checkpoint.at_timestamp(T0),
        cp("0"),
        cp("100", 3),
        cp(BITS_128),
        cp(KINESIS_A, 2),
        cp(MAX, 9),
        Checkpoint.shard_end(),
    ],
    ids=str,
)
def test_move_to_the_same_checkpoint_is_allowed_so_commits_are_idempotent(checkpoint: Checkpoint) -> None:
    validate_move(checkpoint, checkpoint)
    validate_move(checkpoint, checkpoint, read_through=checkpoint)


def test_same_at_timestamp_in_another_time_zone_is_the_same_checkpoint() -> None:
    elsewhere = T0.astimezone(timezone(timedelta(hours=2)))
    validate_move(Checkpoint.at_timestamp(T0), Checkpoint.at_timestamp(elsewhere))


@pytest.mark.parametrize(("lower", "higher"), ASCENDING_PAIRS)
def test_move_backwards_raises(lower: Checkpoint, higher: Checkpoint) -> None:
    with pytest.raises(CheckpointOrderError, match="backwards"):
        validate_move(higher, lower)


@pytest.mark.parametrize(
    ("current", "new"),
    [
        pytest.param(Checkpoint.trim_horizon(), Checkpoint.latest(), id="TRIM_HORIZON to LATEST skips the backlog"),
        pytest.param(Checkpoint.latest(), Checkpoint.trim_horizon(), id="LATEST to TRIM_HORIZON reads again"),
        pytest.param(Checkpoint.at_timestamp(T1), Checkpoint.at_timestamp(T0), id="AT_TIMESTAMP back in time"),
        pytest.param(Checkpoint.at_timestamp(T0), Checkpoint.at_timestamp(T1), id="AT_TIMESTAMP skips ahead"),
        pytest.param(Checkpoint.trim_horizon(), Checkpoint.at_timestamp(T0), id="TRIM_HORIZON to AT_TIMESTAMP"),
        pytest.param(cp("5"), Checkpoint.latest(), id="record to LATEST"),
        pytest.param(Checkpoint.shard_end(), Checkpoint.trim_horizon(), id="SHARD_END to TRIM_HORIZON"),
    ],
)
def test_move_to_another_start_position_raises(current: Checkpoint, new: Checkpoint) -> None:
    with pytest.raises(CheckpointOrderError):
        validate_move(current, new)


@pytest.mark.parametrize(
    ("current", "new", "read_through"),
    [
        pytest.param(Checkpoint.trim_horizon(), cp("11"), cp("10"), id="next record"),
        pytest.param(cp("5"), cp("10", 2), cp("10", 1), id="next sub-record"),
        pytest.param(cp("5"), cp("10"), cp("9"), id="9 < 10 as integers"),
        pytest.param(cp("5"), cp(KINESIS_C), cp(KINESIS_B), id="56 digits"),
        pytest.param(cp("5"), Checkpoint.shard_end(), cp(MAX, 99), id="SHARD_END without reading to the end"),
        pytest.param(Checkpoint.trim_horizon(), cp("1"), Checkpoint.trim_horizon(), id="read nothing"),
    ],
)
def test_move_beyond_what_was_read_raises(current: Checkpoint, new: Checkpoint, read_through: Checkpoint) -> None:
    with pytest.raises(CheckpointOrderError, match="beyond"):
        validate_move(current, new, read_through=read_through)


@pytest.mark.parametrize(
    ("new", "read_through"),
    [
        pytest.param(cp("10"), cp("10"), id="up to the last record read"),
        pytest.param(cp("10", 1), cp("10", 2), id="short of the last sub-record read"),
        pytest.param(cp("9"), cp("10"), id="short of the last record read"),
        pytest.param(Checkpoint.shard_end(), Checkpoint.shard_end(), id="SHARD_END after reading it"),
    ],
)
def test_move_within_what_was_read_is_allowed(new: Checkpoint, read_through: Checkpoint) -> None:
    validate_move(cp("1"), new, read_through=read_through)


def test_checkpoint_order_error_is_an_illegal_argument() -> None:
    with pytest.raises(IllegalArgumentError):
        validate_move(cp("10"), cp("9"))


# -- illegal values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "",
        "abc",
        "12a",
        "-1",
        "+1",
        " 1",
        "1 ",
        "1.5",
        "1e3",
        "0x10",
        "\u0661\u0662",  # Arabic-Indic digits: str.isdigit() is True, but Kinesis sends ASCII
        "trim_horizon",  # sentinels are upper case, as the KCL writes them
        "Shard_End",
        "1" + "0" * 129,  # 130 digits: longer than the API allows
        "0" * 130,
    ],
    ids=repr,
)
def test_value_that_is_neither_a_sentinel_nor_a_sequence_number_raises(value: str) -> None:
    with pytest.raises(IllegalArgumentError):
        Checkpoint(value)


@pytest.mark.parametrize(
    "value", ["0", "1", "007", BITS_128, ABOVE_128_BITS, KINESIS_A, MAX, *Sentinel.__members__], ids=repr
)
def test_sentinels_and_sequence_numbers_of_up_to_129_digits_are_valid(value: str) -> None:
    timestamp = T0 if value == "AT_TIMESTAMP" else None
    assert Checkpoint(value, timestamp=timestamp).value == value


def test_sequence_number_longer_than_129_digits_raises() -> None:
    Checkpoint.at(MAX)
    with pytest.raises(IllegalArgumentError, match="129"):
        Checkpoint.at(str(int(MAX) + 1))


@pytest.mark.parametrize("sub", [-1, -(2**31)])
def test_negative_sub_sequence_number_raises(sub: int) -> None:
    with pytest.raises(IllegalArgumentError, match="sub-sequence"):
        Checkpoint.at("5", sub)


@pytest.mark.parametrize(
    ("value", "timestamp"),
    [
        pytest.param("AT_TIMESTAMP", None, id="AT_TIMESTAMP without timestamp"),
        pytest.param("AT_TIMESTAMP", datetime(2024, 5, 1, 12, 0), id="AT_TIMESTAMP with naive timestamp"),
        pytest.param("TRIM_HORIZON", T0, id="timestamp on TRIM_HORIZON"),
        pytest.param("LATEST", T0, id="timestamp on LATEST"),
        pytest.param("SHARD_END", T0, id="timestamp on SHARD_END"),
        pytest.param("12345", T0, id="timestamp on a sequence number"),
    ],
)
def test_timestamp_goes_with_at_timestamp_only_and_must_be_time_zone_aware(
    value: str, timestamp: datetime | None
) -> None:
    with pytest.raises(IllegalArgumentError):
        Checkpoint(value, timestamp=timestamp)


# -- where a read resumes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("checkpoint", "expected"),
    [
        pytest.param(Checkpoint.trim_horizon(), StartPosition(StartKind.TRIM_HORIZON), id="TRIM_HORIZON"),
        pytest.param(Checkpoint.latest(), StartPosition(StartKind.LATEST), id="LATEST"),
        pytest.param(
            Checkpoint.at_timestamp(T0), StartPosition(StartKind.AT_TIMESTAMP, timestamp=T0), id="AT_TIMESTAMP"
        ),
        pytest.param(cp("12345"), StartPosition(StartKind.AFTER, "12345", 0), id="sequence number"),
        pytest.param(cp(KINESIS_B, 4), StartPosition(StartKind.AFTER, KINESIS_B, 4), id="56 digits with sub-sequence"),
        pytest.param(cp(BITS_128, 2), StartPosition(StartKind.AFTER, BITS_128, 2), id="2**128-1 with sub-sequence"),
        pytest.param(Checkpoint.shard_end(), None, id="SHARD_END: nothing left to read"),
    ],
)
def test_start_position_resumes_after_the_checkpoint(checkpoint: Checkpoint, expected: StartPosition | None) -> None:
    assert checkpoint.start_position() == expected


def test_start_position_after_a_sub_record_skips_it_and_everything_before() -> None:
    position = cp(KINESIS_A, 2).start_position()
    assert position is not None
    assert position.skip_through() == (int(KINESIS_A), 2)
    assert position.iterator_request() == {
        "ShardIteratorType": "AT_SEQUENCE_NUMBER",
        "StartingSequenceNumber": KINESIS_A,
    }


@pytest.mark.parametrize(
    ("checkpoint", "sentinel", "is_start", "is_shard_end"),
    [
        (Checkpoint.trim_horizon(), Sentinel.TRIM_HORIZON, True, False),
        (Checkpoint.latest(), Sentinel.LATEST, True, False),
        (Checkpoint.at_timestamp(T0), Sentinel.AT_TIMESTAMP, True, False),
        (Checkpoint.shard_end(), Sentinel.SHARD_END, False, True),
        (cp("42", 1), None, False, False),
    ],
    ids=str,
)
def test_sentinel_kind_of_a_checkpoint(
    checkpoint: Checkpoint, sentinel: Sentinel | None, is_start: bool, is_shard_end: bool
) -> None:
    assert (checkpoint.sentinel, checkpoint.is_start, checkpoint.is_shard_end) == (sentinel, is_start, is_shard_end)


@pytest.mark.parametrize(
    "checkpoint",
    [
        Checkpoint.trim_horizon(),
        Checkpoint.latest(),
        Checkpoint.shard_end(),
        Checkpoint.at_timestamp(datetime(2026, 11, 22, 3, 4, 5, 123456, tzinfo=UTC)),
        Checkpoint.at("4" * 56),
        Checkpoint.at("4" * 129, 7),
    ],
)
def test_a_checkpoint_survives_its_json_form(checkpoint: Checkpoint) -> None:
    body = json.loads(json.dumps(checkpoint.to_json()))
    assert Checkpoint.from_json(body) == checkpoint
