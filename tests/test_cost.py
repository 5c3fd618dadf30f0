"""What a read was billed: a value that goes through JSON (the commit record, the history) unchanged."""

from __future__ import annotations

from kinesis_batch.cost import ReadCost


def test_the_bill_goes_through_json_and_says_itself_in_one_phrase() -> None:
    cost = ReadCost("00job", "00app", 0.0666667, 0.2666667, 0.3333333)
    assert ReadCost.from_json(cost.to_json()) == cost
    assert ReadCost.from_json(None) is None and ReadCost.from_json({}) is None
    assert cost.said() == "0.067 vCPU-hours, 0.267 memory GB-hours, 0.333 storage GB-hours billed"
