"""Bounded exponential backoff with full jitter, shared by everything that retries."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: ``attempts`` for a retry that a budget of time ends instead (kinesis_batch.control.waiting).
UNCOUNTED = 2**31


@dataclass(frozen=True)
class Backoff:
    """``attempts`` tries in all; waits grow from ``base`` doubling up to ``cap`` seconds, each
    the growth's share ``jitter()`` in [0, 1) drew (full jitter; a test passes a fixed share)."""

    base: float = 0.2
    cap: float = 5.0
    attempts: int = 10
    jitter: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def delay(self, attempt: int, rand: Callable[[], float] | None = None) -> float:
        """Seconds to wait before try number ``attempt + 1`` (``attempt`` counts from 1)."""
        share = (rand or self.jitter)()
        return float(share) * min(self.cap, self.base * 2.0 ** (attempt - 1))

    def sleep(self, attempt: int, sleep: Callable[[float], None] = time.sleep) -> None:
        sleep(self.delay(attempt))
