"""A setting's bounds, written once: what every adapter refuses (the settings' checks, in the
same words wherever a value comes from) and what a form shows (as JSON Schema)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kinesis_batch.errors import IllegalArgumentError


@dataclass(frozen=True)
class Bound:
    """``low``..``high`` (None: open on that side); ``above``: ``low`` itself is out (a
    number that must be more than it, such as a positive one)."""

    low: float | None = None
    high: float | None = None
    above: bool = False

    @property
    def said(self) -> str:
        """The range in words: ``in 10..86400``, ``0 or more``, ``more than 0``, ``at most 1``."""
        if self.low is not None and self.high is not None and not self.above:
            return f"in {self.low:g}..{self.high:g}"
        parts = []
        if self.low is not None:
            parts.append(f"more than {self.low:g}" if self.above else f"{self.low:g} or more")
        if self.high is not None:
            parts.append(f"at most {self.high:g}")
        return " and ".join(parts)

    def holds(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            return False
        return self.high is None or value <= self.high

    def check(self, setting: str, value: float) -> None:
        """Refuse ``value`` out of bounds, in one line naming ``setting`` (``--flag``)."""
        if not self.holds(value):
            raise IllegalArgumentError(f"{setting}: {value:g} is not {self.said}")

    def schema(self) -> dict[str, Any]:
        """The bound as JSON Schema rules (a form's field)."""
        rules: dict[str, Any] = {}
        if self.low is not None:
            rules["exclusiveMinimum" if self.above else "minimum"] = self.low
        if self.high is not None:
            rules["maximum"] = self.high
        return rules


#: No bound: any number.
ANY = Bound()
#: The bounds more than one setting shares (a run's and maintenance's, a value's own check and
#: the settings' option): each written here once.
POSITIVE = Bound(0, above=True)
NOT_NEGATIVE = Bound(0)
#: A run's files roll at, and maintenance compacts to, this many MiB.
TARGET_FILE_MB = Bound(1, 4096)
#: Maintenance keeps versions and snapshots this many hours (ten years at most).
RETAIN_HOURS = Bound(0, 24 * 3650)

__all__ = ["ANY", "NOT_NEGATIVE", "POSITIVE", "RETAIN_HOURS", "TARGET_FILE_MB", "Bound"]
