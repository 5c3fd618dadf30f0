"""A streams file: one ``[[streams]]`` table per stream's consumer, read the same way for every
orchestrator that makes a consumer per stream (Airflow's ``dags/kinesis_streams.py``, Dagster's
definitions). Each adapter says what an entry becomes and which settings it takes::

    [aws]                    # other top-level tables are the adapter's (Dagster: [aws], [spark])
    region_name = "eu-west-1"

    [[streams]]
    stream = "clicks"        # stream and output are required in every entry
    output = "s3://lake/tables/clicks"
    format = "delta"

- A file that cannot be read, is not TOML, or has no ``[[streams]]`` tables raises
  IllegalArgumentError naming the file: no consumer can be made from it.
- Each entry is checked on its own: a missing or unknown setting, a value the adapter refuses,
  or a stream listed twice makes a :class:`BrokenEntry` (its number, its stream, what is wrong,
  starting with the field), and the other entries still load.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.options import not_a_setting

T = TypeVar("T")
REQUIRED = ("stream", "output")


@dataclass(frozen=True)
class BrokenEntry:
    number: int  # 1-based, in file order
    stream: str  # "" when the entry names no stream
    message: str  # what is wrong, starting with the field

    def describe(self, path: Path) -> str:
        """One line: the file, the entry (by its stream too where it names one), what is wrong."""
        named = f" ({self.stream})" if self.stream else ""
        return f"{path}: stream {self.number}{named}: {self.message}"


@dataclass(frozen=True)
class StreamsFile:
    path: Path
    sections: dict[str, Any]  # the file's other top-level tables
    tables: list[dict[str, Any]]  # the [[streams]] tables, as written

    @classmethod
    def read(cls, path: Path) -> StreamsFile:
        try:
            body = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise IllegalArgumentError(f"{path}: {exc}") from exc
        tables = body.pop("streams", None)
        if not isinstance(tables, list) or not tables or not all(isinstance(table, dict) for table in tables):
            raise IllegalArgumentError(f"{path}: no [[streams]] tables (each with at least stream and output)")
        return cls(path, body, tables)

    def entries(
        self, make: Callable[..., T], settings: Collection[str], *, key: Callable[[T], str] = str
    ) -> tuple[list[T], list[BrokenEntry]]:
        """The entries as ``make(**table)`` made them, and the broken ones. ``settings``: the
        names an entry may use; ``make`` raises IllegalArgumentError (or TypeError, for a value
        of the wrong type) naming the field; ``key``: what a stream listed twice has twice."""
        entries: list[T] = []
        broken: list[BrokenEntry] = []
        seen: set[str] = set()
        for number, table in enumerate(self.tables, start=1):
            unknown = sorted(set(table) - set(settings))
            missing = [name for name in REQUIRED if name not in table]
            named = table.get("stream")
            stream = named if isinstance(named, str) else ""
            try:
                if unknown:
                    raise not_a_setting(unknown[0], settings)
                if missing:
                    raise IllegalArgumentError(f"{missing[0]}: missing")
                made = make(**table)
                if key(made) in seen:
                    raise IllegalArgumentError(f"stream: {stream!r} is listed twice")
            except (IllegalArgumentError, TypeError) as exc:
                broken.append(BrokenEntry(number, stream, str(exc)))
                continue
            seen.add(key(made))
            entries.append(made)
        return entries, broken


__all__ = ["BrokenEntry", "StreamsFile"]
