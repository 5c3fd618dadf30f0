"""The fleet at a glance: every stream of a streams file, its group, and what its status says
(kinesis_batch.status.values), one line each, worst first. Pure: a stream's status is read by
the caller (``kinesis-batch status --streams-file F``), or its error kept as its line.

The worst first: a stream whose status cannot be read (its entry is broken, its output holds
another format's table, it was deleted, its role cannot be assumed) first, then by retention
risk (lost, critical, at risk), then with a batch pending (a run failed or is under way), then
by lag. A stream that never ran has no lease table yet: it is "not run yet", not an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kinesis_batch.errors import LeaseTableNotFoundError
from kinesis_batch.shards.lag import RetentionRisk
from kinesis_batch.status.values import StreamStatus

NOT_RUN = "not run yet"
#: Streams whose status is read side by side: each is a few control-plane calls and a lag probe a shard.
READS_AT_ONCE = 8
RUNNING, PENDING, COMMITTED = "running", "pending", "committed"


@dataclass(frozen=True)
class FleetLine:
    """One stream of the fleet: its status in a few figures, or the error that kept it from
    being read (``error``; the figures are then empty)."""

    stream: str
    group: str = ""  # "" when in none
    error: str = ""
    lag_seconds: float = 0.0
    retention_risk: RetentionRisk = RetentionRisk.OK
    outcome: str = NOT_RUN  # NOT_RUN, RUNNING (a lease held now), PENDING (a batch pending, none held), COMMITTED
    last_run: str | None = None  # the output's last committed batch's run
    committed_at: datetime | None = None
    records: int = 0  # that batch's
    dead_letters: int = 0  # that batch's
    pending_batches: tuple[str, ...] = ()

    def rank(self) -> tuple[int, int, int, float]:
        """Lower is worse: sorts the fleet worst first."""
        risks = list(RetentionRisk)
        return (
            0 if self.error else 1,
            -risks.index(self.retention_risk),
            0 if self.pending_batches else 1,
            -self.lag_seconds,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "group": self.group or None,
            "error": self.error or None,
            "lag_seconds": self.lag_seconds,
            "retention_risk": self.retention_risk.value,
            "outcome": self.outcome,
            "last_run": self.last_run,
            "committed_at": self.committed_at.isoformat() if self.committed_at else None,
            "records": self.records,
            "dead_letters": self.dead_letters,
            "pending_batches": list(self.pending_batches),
        }


def fleet_line(stream: str, group: str, status: StreamStatus) -> FleetLine:
    """What a stream's status says of it, in the fleet's figures."""
    summary = status.summary()
    output = status.output
    if summary["leased"]:
        outcome = RUNNING
    elif summary["pending_batches"]:
        outcome = PENDING
    elif output is not None and output.last_batch is not None:
        outcome = COMMITTED
    else:
        outcome = NOT_RUN
    return FleetLine(
        stream=stream,
        group=group,
        lag_seconds=status.max_lag_seconds,
        retention_risk=status.worst_retention_risk,
        outcome=outcome,
        last_run=output.last_run if output else None,
        committed_at=output.committed_at if output else None,
        records=output.records if output else 0,
        dead_letters=output.landing.dead_letters if output and output.landing else 0,
        pending_batches=tuple(summary["pending_batches"]),
    )


def read_fleet(
    streams: Iterable[str],
    groups: Mapping[str, str],
    read: Callable[[str], StreamStatus],
    *,
    broken: Mapping[str, str] | None = None,
    at_once: int = READS_AT_ONCE,
) -> list[FleetLine]:
    """Every stream's line (``groups``: stream -> its group; ``read``: its status, asked of
    ``at_once`` streams side by side; ``broken``: stream -> why its entry cannot be read), worst
    first. A stream's error is its line alone."""

    def line(stream: str) -> FleetLine:
        group = groups.get(stream, "")
        try:
            return fleet_line(stream, group, read(stream))
        except LeaseTableNotFoundError:  # its first run makes the table
            return FleetLine(stream, group)
        except Exception as exc:  # one stream's failure to read is its line, never the fleet's
            return FleetLine(stream, group, error=str(exc))

    with ThreadPoolExecutor(max_workers=at_once) as pool:
        lines = list(pool.map(line, streams))
    lines += [FleetLine(stream, groups.get(stream, ""), error=why) for stream, why in (broken or {}).items()]
    return sorted(lines, key=FleetLine.rank)


__all__ = ["COMMITTED", "NOT_RUN", "PENDING", "RUNNING", "FleetLine", "fleet_line", "read_fleet"]
