"""Whether a shard holds a record past where a read would start: what a run asks before it
starts a read (a Spark job, an EMR Serverless job run, a Spark Connect operation), so that an
hour with nothing new costs nothing remote.

Contract (:func:`has_news`): one GetShardIterator and one GetRecords of two records, paced and
retried as a read's own calls are (kinesis_batch.shards.fetcher), so the probe stays within the
shard's read limits. It errs on the side of reading: it says False only when Kinesis said
there is nothing, never on a guess.

=====================================================  ======================================
what Kinesis answers                                   news?
=====================================================  ======================================
a user record past the checkpoint, within the run's   yes (as the reader sees them: aggregates
bound                                                  unpacked, the checkpoint's own record and
                                                       its sub-records up to the checkpoint
                                                       skipped)
a user record past the bound                          no: the read would stop before it
no record and no next iterator (the shard ended)       yes: its end must be recorded
a closed shard (the listing says so)                  yes, without a call: the same (Kinesis
                                                       says so only past its last record)
no record, ``MillisBehindLatest`` above 0 or missing   yes: records may lie further on (Kinesis
                                                       answers empty pages in a sparse shard)
no record, ``MillisBehindLatest`` 0                    no
a ``LATEST`` start (a first run's)                     yes, without a call: the read decides
=====================================================  ======================================
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from kinesis_batch._backoff import Backoff
from kinesis_batch.shards.chunk import unpack
from kinesis_batch.shards.fetcher import PageFetcher
from kinesis_batch.shards.limits import ReadLimits
from kinesis_batch.shards.page import arrival
from kinesis_batch.shards.positions import EndBound, StartKind, StartPosition

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient

#: As a read's own calls are retried (kinesis_batch.shards.reader).
PROBE_BACKOFF = Backoff(base=0.25, cap=5.0, attempts=12)


def has_news(
    client: KinesisClient,
    stream: str,
    shard_id: str,
    start: StartPosition,
    *,
    closed: bool,
    end: EndBound,
    limits: ReadLimits,
    backoff: Backoff = PROBE_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Whether a read of ``shard_id`` (``closed``: as the listing says) from ``start`` to
    ``end`` would find anything to read or record (see the module's table)."""
    if closed or start.kind is StartKind.LATEST:
        return True
    # Two records: a checkpoint is resumed AT its own record (an aggregate may be read part way).
    two = replace(limits, records_per_call=2)
    fetcher = PageFetcher(client, stream, shard_id, start, limits=two, backoff=backoff, sleep=sleep)
    page = fetcher.fetch(fetcher.first_iterator())
    done = start.skip_through()
    unread = unpack(shard_id, page.records)  # what the reader would hand on of this page
    unread = unread.after(done) if done is not None else unread
    if len(unread):
        return not end.excludes(unread.sequence_numbers[0], arrival(unread.arrivals_ms[0]))
    if page.next_shard_iterator is None:
        return True
    return page.millis_behind_latest != 0


__all__ = ["has_news"]
