"""The decoder of a source's change records: a record that is not JSON, not an object, or null
where the source never sends null is a dead letter with its reason, never a crash of the task;
Debezium's null (the tombstone after a delete) is skipped and counted."""

from __future__ import annotations

import pytest

from kinesis_batch.decoding.formats.envelope import UNWRAP, EnvelopeDecoder

NULL = {"dynamodb": "not a DynamoDB change", "dms": "malformed envelope", "debezium": None}


@pytest.mark.parametrize("mode", sorted(UNWRAP))
def test_a_record_that_is_no_change_is_a_reason_and_debeziums_null_is_skipped(mode: str) -> None:
    decoder = EnvelopeDecoder(mode)
    decoded = decoder.decode([b"{broken", b"[1]", b"null"])
    reasons = {r.position: f"{r.stage}: {r.kind}" for r in decoded.rejects}
    null = NULL[mode]
    wanted = {0: "decode: not JSON", 1: "decode: not a JSON object"} | ({2: f"decode: {null}"} if null else {})
    assert reasons == wanted
    assert sum(decoder.skipped.values()) == (0 if null else 1)
    assert decoded.values.to_pylist() == []
