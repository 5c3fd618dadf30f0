"""The pace a reader keeps on one shard: Kinesis' own limits by default, the command line's
syntax for them (parsed back from what it prints), and the pause each response asks for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.shards.limits import MAX_RECORDS_PER_CALL, MIB, ReadLimits


def test_the_default_is_kinesis_per_shard_limits() -> None:
    assert ReadLimits() == ReadLimits.parse("kinesis") == ReadLimits(5.0, 2 * MIB, MAX_RECORDS_PER_CALL)
    assert ReadLimits.parse("none") == ReadLimits.unlimited() == ReadLimits(None, None)


@given(calls=st.floats(0.01, 1000), size=st.floats(1, 10 * MIB))
def test_what_it_prints_parses_back_to_it(calls: float, size: float) -> None:
    for limits in (ReadLimits(), ReadLimits.unlimited(), ReadLimits(float(f"{calls:g}"), float(f"{size:g}"))):
        assert ReadLimits.parse(limits.to_arg()) == limits


@pytest.mark.parametrize("text", ["fast", "5", "5,", ",2097152", "5;2097152", "0,1", "-1,1", "5,0"])
def test_a_value_it_cannot_read_is_one_line(text: str) -> None:
    with pytest.raises(IllegalArgumentError, match=r"read-limits|must be a positive number") as caught:
        ReadLimits.parse(text)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("records", [0, MAX_RECORDS_PER_CALL + 1, True, 2.5])
def test_records_per_call_stay_within_get_records_own_limit(records: object) -> None:
    with pytest.raises(IllegalArgumentError, match=r"records_per_call must be 1\.\.10000"):
        ReadLimits(records_per_call=records)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("limits", "response", "pause"),
    [
        (ReadLimits(), 0, 0.2),  # five calls a second
        (ReadLimits(), 2 * MIB, 1.0),  # two MiB a second: a full response waits a second
        (ReadLimits(), MIB // 4, 0.2),  # small responses: the call limit governs
        (ReadLimits(calls_per_second=None), MIB, 0.5),
        (ReadLimits.unlimited(), 10 * MIB, 0.0),
    ],
)
def test_the_pause_after_a_call_keeps_both_limits(limits: ReadLimits, response: int, pause: float) -> None:
    assert limits.pause_after(response) == pytest.approx(pause)
