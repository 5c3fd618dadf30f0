"""The end-of-shard rules, one row per way AWS or an emulator shows where a shard's read ends."""

from __future__ import annotations

import pytest

from kinesis_batch.shards import page as fetched_page
from kinesis_batch.shards.shard_end import CLOSED_SHARD_EMPTY_TIP_PAGES, Page, Verdict, judge

EMPTY_AT_TIP = dict(records=0, next_iterator=True, millis_behind_latest=0)

CASES = [
    # (who and what, page, closed, empty tip pages before, verdict)
    ("AWS: a closed shard's last page, records and no NextShardIterator",
     Page(records=5, next_iterator=False, millis_behind_latest=0, child_shards=True), True, 0,
     Verdict(empty_tip_pages=0, at_tip=False, drained=True)),
    ("kinesis-local: the same, ChildShards telling a shard the listing had open is closed",
     Page(records=5, next_iterator=False, millis_behind_latest=0, child_shards=True), False, 0,
     Verdict(empty_tip_pages=0, at_tip=False, drained=True)),
    ("kinesalite: a closed shard ends with one more, empty page without NextShardIterator",
     Page(records=0, next_iterator=False, millis_behind_latest=0), True, 0,
     Verdict(empty_tip_pages=1, at_tip=False, drained=True)),
    ("moto: a closed shard's first empty page at the tip is not its end yet",
     Page(**EMPTY_AT_TIP), True, 0, Verdict(empty_tip_pages=1, at_tip=False, drained=False)),
    ("moto: a closed shard's third empty page in a row at the tip is its end",
     Page(**EMPTY_AT_TIP), True, CLOSED_SHARD_EMPTY_TIP_PAGES - 1,
     Verdict(empty_tip_pages=CLOSED_SHARD_EMPTY_TIP_PAGES, at_tip=False, drained=True)),
    ("AWS: an open shard's tip is an empty page with MillisBehindLatest 0",
     Page(**EMPTY_AT_TIP), False, 0, Verdict(empty_tip_pages=1, at_tip=True, drained=False)),
    ("kinesalite: an open shard's tip without MillisBehindLatest counts as at the tip",
     Page(records=0, next_iterator=True, millis_behind_latest=None), False, 0,
     Verdict(empty_tip_pages=1, at_tip=True, drained=False)),
    ("AWS: an empty page in a sparse stretch (MillisBehindLatest above 0) goes on",
     Page(records=0, next_iterator=True, millis_behind_latest=86_400_000), False, 0,
     Verdict(empty_tip_pages=0, at_tip=False, drained=False)),
    ("AWS: a page of records resets the count of empty tip pages",
     Page(records=100, next_iterator=True, millis_behind_latest=0), True, 2,
     Verdict(empty_tip_pages=0, at_tip=False, drained=False)),
    ("AWS: a closed shard's empty page with ChildShards but a NextShardIterator goes on",
     Page(records=0, next_iterator=True, millis_behind_latest=0, child_shards=True), False, 0,
     Verdict(empty_tip_pages=1, at_tip=False, drained=False)),
]  # fmt: skip


@pytest.mark.parametrize(("page", "closed", "before", "verdict"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_way_a_shard_ends_is_judged_from_the_page_alone(
    page: Page, closed: bool, before: int, verdict: Verdict
) -> None:
    assert judge(page, closed=closed, empty_tip_pages_before=before) == verdict


def test_a_page_is_judged_from_the_fetched_page() -> None:
    fetched = fetched_page.Page(
        fetched_page.RecordColumns(["1", "2"], [0, 0], ["k", "k"], [b"", b""]),
        millis_behind_latest=0,
        child_shards=({"ShardId": "shardId-1"},),
    )

    assert Page.of(fetched) == Page(records=2, next_iterator=False, millis_behind_latest=0, child_shards=True)


def test_the_last_page_is_the_shards_end_or_an_open_shards_tip() -> None:
    assert Verdict(1, at_tip=True, drained=False).last_page
    assert Verdict(0, at_tip=False, drained=True).last_page
    assert not Verdict(0, at_tip=False, drained=False).last_page
