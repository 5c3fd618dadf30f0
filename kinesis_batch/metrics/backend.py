"""What a metrics backend does: send one run's points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kinesis_batch.metrics.points import Point


class Backend(Protocol):
    def send(self, points: Sequence[Point]) -> None:
        """Send every point, once. Raises KinesisBatchError (DependencyError when the backend
        cannot be reached) when they did not all arrive; the caller warns and the run goes on."""


__all__ = ["Backend"]
