"""A job run's states (GetJobRun.jobRun.state), as this package acts on them. QUEUED is waiting
too: applications made on EMR 7.3.0 or later queue job runs by default, a state the Amazon
provider's hook leaves out of its own sets."""

from __future__ import annotations

WAITING = frozenset({"SUBMITTED", "PENDING", "SCHEDULED", "QUEUED"})
RUNNING = "RUNNING"
CANCELLING = "CANCELLING"
SUCCESS = "SUCCESS"
ENDED = frozenset({SUCCESS, "FAILED", "CANCELLED"})
#: Every state of a job run that has not ended: what ListJobRuns is asked for to find orphans.
ACTIVE = frozenset({*WAITING, RUNNING, CANCELLING})

__all__ = ["ACTIVE", "CANCELLING", "ENDED", "RUNNING", "SUCCESS", "WAITING"]
