"""Pure: the top of an output location, by name (what kinesis_batch.output.found tells from it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Listing:
    """The top of a location: its files and folders by name, and the files of its ``metadata/``
    folder (listed only when there is one)."""

    files: frozenset[str] = frozenset()
    folders: frozenset[str] = frozenset()
    metadata: frozenset[str] = frozenset()

    @classmethod
    def of(cls, files: Iterable[str], folders: Iterable[str], metadata: Iterable[str] = ()) -> Listing:
        return cls(frozenset(files), frozenset(folders), frozenset(metadata))


__all__ = ["Listing"]
