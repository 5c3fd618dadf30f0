"""Whose items a lease table holds, judged from the items alone: one row per kind of table."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.ownership.foreign import is_ours, looks_like

KCL_CORE = {
    "leaseCounter": {"N": "1843"},
    "checkpoint": {"S": "49680541111111111111111111111111111111111111111111111111"},
    "checkpointSubSequenceNumber": {"N": "0"},
    "ownerSwitchesSinceCheckpoint": {"N": "2"},
}
OURS = {**KCL_CORE, "lineageDepth": {"N": "0"}}


def item(key: str = "shardId-000000000000", **attributes: Any) -> dict[str, Any]:
    return {"leaseKey": {"S": key}, **attributes}


CASES = [
    ("a run's lease items", [item(**OURS), item("shardId-000000000001", **OURS, lastBatchId={"S": "b"})], None),
    ("a KCL application's, stopped: KCL's names, none of ours", [item(**KCL_CORE)],
     "a KCL application's (KCL's attribute names and none of kinesis-batch's)"),
    ("a KCL application's with owners and parents", [item(**KCL_CORE, leaseOwner={"S": "kcl-worker-7f3a"},
                                                          parentShardId={"SS": ["shardId-000000000000"]})],
     "a KCL application's (KCL's attribute names and none of kinesis-batch's)"),
    ("KCL 2.x's own attributes, beside ours", [item(**OURS, childShardIds={"SS": ["shardId-2"]})],
     "a KCL application's (KCL's own attributes: childShardIds)"),
    ("a KCL multi-stream application's keys", [item("123456789012:orders:1764000000:shardId-000000000000", **KCL_CORE)],
     "a KCL multi-stream application's (keys account:stream:epoch:shardId)"),
    ("KCL 3's single table", [item(**KCL_CORE, entityType={"S": "LEASE"})],
     "a KCL 3 application's (items with entityType)"),
    ("something else entirely", [item(colour={"S": "red"})], "an unknown application's"),
    ("one foreign item among ours", [item(**OURS), item("shardId-000000000001", **KCL_CORE)],
     "a KCL application's (KCL's attribute names and none of kinesis-batch's)"),
]  # fmt: skip


@pytest.mark.parametrize(("items", "says"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_table_looks_like_whose_items_it_holds(items: list[dict[str, Any]], says: str | None) -> None:
    assert looks_like(items) == says


def test_an_item_is_ours_by_our_attributes_and_a_plain_shard_key() -> None:
    assert is_ours(item(**OURS))
    assert not is_ours(item(**KCL_CORE))
    assert not is_ours(item("123456789012:s:1:shardId-000000000000", **OURS))
