"""Whether a lease table's items are kinesis-batch's, and what they look like when not (pure).

kinesis-batch writes KCL's attribute names, so a KCL application's lease table parses as ours.
What tells them apart:

- **ours**: every kinesis-batch lease item carries ``lineageDepth`` (set when a run creates it),
  and may carry ``leaseExpiresAt``, ``pendingBatchId``, ``lastBatchId``, ``lastRunId``,
  ``checkpointTimestamp``, ``settleFailure``; none of the attributes only KCL writes; a plain shard id as its key.
- **a KCL application's**: KCL's attributes without any of ours (``leaseCounter``,
  ``checkpoint``, ``checkpointSubSequenceNumber``, ``ownerSwitchesSinceCheckpoint``...), or
  attributes only KCL writes (``childShardId(s)``, ``startingHashKey``/``endingHashKey``,
  ``pendingCheckpointState``, ``throughputKBps``, ``checkpointOwner``, KCL 3's ``entityType``,
  multi-stream ``streamName``/``shardId``), or multi-stream keys ``account:stream:epoch:shardId``.
- **unknown**: anything else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

Item = Mapping[str, Mapping[str, Any]]

OURS = frozenset(
    {"lineageDepth", "leaseExpiresAt", "pendingBatchId", "lastBatchId", "lastRunId", "checkpointTimestamp"}
    | {"settleFailure"}
)
KCL = frozenset(
    {"leaseKey", "leaseCounter", "leaseOwner", "checkpoint", "checkpointSubSequenceNumber", "pendingCheckpoint"}
    | {"pendingCheckpointSubSequenceNumber", "ownerSwitchesSinceCheckpoint", "parentShardId"}
)
KCL_ONLY = frozenset(
    {"childShardId", "childShardIds", "startingHashKey", "endingHashKey", "pendingCheckpointState"}
    | {"throughputKBps", "checkpointOwner", "entityType", "streamName", "shardId", "isMarkedForLeaseSteal"}
)
#: KCL's key for a lease of a multi-stream application: account:stream:creationEpoch:shardId.
MULTI_STREAM_KEY = re.compile(r"^(\d{12}):([^:]+):(\d+):(.+)$")


def is_ours(item: Item) -> bool:
    key = str(item.get("leaseKey", {}).get("S", ""))
    return bool(OURS & set(item)) and not KCL_ONLY & set(item) and not MULTI_STREAM_KEY.match(key)


def looks_like(items: Iterable[Item]) -> str | None:
    """None when every item is ours; else what the table looks like, for the refusal's line."""
    foreign = [item for item in items if not is_ours(item)]
    if not foreign:
        return None
    keys = [str(item.get("leaseKey", {}).get("S", "")) for item in foreign]
    names = set().union(*(set(item) for item in foreign))
    if any(MULTI_STREAM_KEY.match(key) for key in keys):
        return "a KCL multi-stream application's (keys account:stream:epoch:shardId)"
    if "entityType" in names:
        return "a KCL 3 application's (items with entityType)"
    if names & KCL_ONLY:
        return f"a KCL application's (KCL's own attributes: {', '.join(sorted(names & KCL_ONLY))})"
    if "leaseCounter" in names and names <= KCL:
        return "a KCL application's (KCL's attribute names and none of kinesis-batch's)"
    return "an unknown application's"


__all__ = ["KCL", "KCL_ONLY", "MULTI_STREAM_KEY", "OURS", "is_ours", "looks_like"]
