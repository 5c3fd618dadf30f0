"""The read step's one argument when it runs as a process elsewhere (spark-submit, an EMR
Serverless job run; ``kinesis_batch/cli/read_step.py`` reads it): the run's configuration and
id, its attempt and where its result goes. Written in one place for both."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReadStepSpec:
    """``config``: ``RunConfig.to_json`` of the read; ``run_id``: the run whose leases it reads
    under; ``attempt`` and ``result`` (a Place's JSON): the step's last act is to write its
    result there (kinesis_batch.serverless.attempt.JobResult: its exit code, its error's line and
    kind), which the submitting process reads (None: it watches the exit code alone)."""

    config: dict[str, Any]
    run_id: str
    attempt: str | None = None
    result: dict[str, Any] | None = None

    def to_json(self) -> str:
        body: dict[str, Any] = {"config": self.config, "run_id": self.run_id}
        if self.attempt is not None:
            body |= {"attempt": self.attempt, "result": self.result}
        return json.dumps(body)

    @classmethod
    def from_json(cls, text: str) -> ReadStepSpec:
        body = json.loads(text)
        return cls(body["config"], body["run_id"], body.get("attempt"), body.get("result"))


__all__ = ["ReadStepSpec"]
