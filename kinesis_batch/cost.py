"""What a batch's read was billed, where a service bills it by itself: an EMR Serverless job run's
``billedResourceUtilization`` (kinesis_batch.serverless). A value, carried by the batch's commit
record into the checkpoint history, the runs' summaries, the views and the metrics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReadCost:
    """The job run that read the batch and the resources billed for it."""

    job_run_id: str
    application_id: str
    vcpu_hours: float
    memory_gb_hours: float
    storage_gb_hours: float

    def to_json(self) -> dict[str, Any]:
        return {
            "job_run_id": self.job_run_id,
            "application_id": self.application_id,
            "vcpu_hours": self.vcpu_hours,
            "memory_gb_hours": self.memory_gb_hours,
            "storage_gb_hours": self.storage_gb_hours,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any] | None) -> ReadCost | None:
        if not body:
            return None
        return cls(
            str(body["job_run_id"]),
            str(body.get("application_id", "")),
            float(body.get("vcpu_hours", 0.0)),
            float(body.get("memory_gb_hours", 0.0)),
            float(body.get("storage_gb_hours", 0.0)),
        )

    def said(self) -> str:
        """The bill in one phrase."""
        return (
            f"{self.vcpu_hours:.3f} vCPU-hours, {self.memory_gb_hours:.3f} memory GB-hours, "
            f"{self.storage_gb_hours:.3f} storage GB-hours billed"
        )


__all__ = ["ReadCost"]
