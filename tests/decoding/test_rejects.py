"""Why a record did not become rows (kinesis_batch.decoding.rejects): a value with one line, the
first reason a record is rejected for is the one it keeps, counts by stage and kind, and the
one line --on-bad-record fail stops with."""

from __future__ import annotations

from kinesis_batch.decoding.rejects import DECODE, SCHEMA, TYPE_CHANGED, Rejected, bad_record, note, tally
from kinesis_batch.errors import BadRecordError


def test_a_rejection_is_one_line_its_kind_then_its_detail() -> None:
    assert Rejected(3, DECODE, "not JSON").reason == "not JSON"
    moved = Rejected(0, SCHEMA, TYPE_CHANGED, "x is string; the table has int64").at(7)
    assert moved == Rejected(7, SCHEMA, TYPE_CHANGED, "x is string; the table has int64")
    assert moved.reason == "type changed: x is string; the table has int64"


def test_a_record_keeps_the_first_reason_it_was_rejected_for() -> None:
    rejected = {1: Rejected(1, DECODE, "not JSON")}
    note(rejected, [Rejected(1, SCHEMA, TYPE_CHANGED), Rejected(2, SCHEMA, TYPE_CHANGED), Rejected(2, DECODE, "x")])
    assert rejected == {1: Rejected(1, DECODE, "not JSON"), 2: Rejected(2, SCHEMA, TYPE_CHANGED)}
    assert tally(rejected.values()) == {"decode: not JSON": 1, "schema: type changed": 1}


def test_the_first_bad_record_stops_the_run_naming_its_shard_position_stage_and_reason() -> None:
    error = bad_record("shardId-7", "4960", 2, Rejected(0, DECODE, "not JSON", "expected '{'"))
    assert isinstance(error, BadRecordError)
    assert str(error).startswith(
        "shard shardId-7, sequence number 4960 (sub-sequence 2): decode failed: not JSON: expected '{'"
    )
    assert "(sub-sequence" not in str(bad_record("shardId-7", "4960", 0, Rejected(0, DECODE, "not JSON")))
