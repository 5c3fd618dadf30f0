"""The fleet's lines: what a stream's status says in a few figures, and the order, worst first,
drawn against an independent ordering of the same facts: a stream that cannot be read first, then
by retention risk, a batch pending, lag."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.errors import LeaseTableNotFoundError, StreamNotFoundError
from kinesis_batch.shards.lag import RetentionRisk, ShardLag
from kinesis_batch.status.fleet import COMMITTED, NOT_RUN, PENDING, RUNNING, FleetLine, fleet_line, read_fleet
from kinesis_batch.status.values import OutputStatus, ShardStatus, StreamStatus

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def status(
    *, lag_seconds: float = 0, owner: str | None = None, pending: str | None = None, batch: str | None = "b1"
) -> StreamStatus:
    lag = ShardLag("shardId-0", NOW, NOW - timedelta(seconds=lag_seconds) if lag_seconds else None, 0)
    shard = ShardStatus(
        shard_id="shardId-0", parent_shard_ids=(), children=(), lineage_depth=0, closed=False, checkpoint=None,
        lease_owner=owner, lease_expires_at_ms=int(NOW.timestamp() * 1000) + 60_000 if owner else None,
        pending_batch=pending, last_run=None, lag=lag, retention_risk=lag.risk(24),
    )  # fmt: skip
    output = OutputStatus("delta", "/o", batch, "r1" if batch else None, NOW if batch else None, 7, None, ())
    return StreamStatus("s", "kinesis-batch-s", NOW, 24, (shard,), output, None)


def test_what_a_status_says_in_the_fleets_figures() -> None:
    line = fleet_line("s", "g", status(lag_seconds=13 * 3600))
    assert (line.outcome, line.retention_risk, line.last_run, line.records) == (
        COMMITTED,
        RetentionRisk.AT_RISK,
        "r1",
        7,
    )
    assert line.lag_seconds == 13 * 3600 and line.group == "g"
    assert fleet_line("s", "", status(owner="w1")).outcome == RUNNING
    assert fleet_line("s", "", status(pending="b2")).outcome == PENDING
    assert fleet_line("s", "", status(pending="b2")).pending_batches == ("b2",)
    assert fleet_line("s", "", status(batch=None)).outcome == NOT_RUN


def test_a_stream_that_cannot_be_read_is_its_own_line_and_one_never_run_is_not_an_error() -> None:
    def read(stream: str) -> StreamStatus:
        if stream == "gone":
            raise StreamNotFoundError("stream 'gone' does not exist")
        if stream == "new":
            raise LeaseTableNotFoundError("lease table 'kinesis-batch-new' does not exist")
        return status(lag_seconds=60)

    lines = read_fleet(["ok", "gone", "new"], {"gone": "g"}, read, broken={"typo": "f.toml: stream 4 (typo): fromat"})
    # the errors first, in the order read (the sort is stable): the streams read, then the broken entries
    assert [(line.stream, line.group, line.error) for line in lines[:2]] == [
        ("gone", "g", "stream 'gone' does not exist"),
        ("typo", "", "f.toml: stream 4 (typo): fromat"),
    ]
    assert [line.stream for line in lines[2:]] == ["ok", "new"]
    assert lines[3].outcome == NOT_RUN and not lines[3].error


RISKS = list(RetentionRisk)


@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from(RISKS), st.booleans(), st.floats(0, 10**6, allow_nan=False)),
        max_size=20,
    )
)
def test_the_fleet_is_worst_first(facts: list[tuple[bool, RetentionRisk, bool, float]]) -> None:
    lines = [
        FleetLine(f"s{i}", error="broken" if failed else "", retention_risk=risk,
                  pending_batches=("b",) if pending else (), lag_seconds=lag)
        for i, (failed, risk, pending, lag) in enumerate(facts)
    ]  # fmt: skip
    ordered = sorted(lines, key=FleetLine.rank)

    def worse_or_same(a: FleetLine, b: FleetLine) -> bool:  # the oracle: compared fact by fact
        if bool(a.error) != bool(b.error):
            return bool(a.error)
        if a.retention_risk != b.retention_risk:
            return RISKS.index(a.retention_risk) > RISKS.index(b.retention_risk)
        if bool(a.pending_batches) != bool(b.pending_batches):
            return bool(a.pending_batches)
        return a.lag_seconds >= b.lag_seconds

    assert all(worse_or_same(a, b) for a, b in itertools.pairwise(ordered))
