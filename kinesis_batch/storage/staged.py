"""What a batch's read step left in its staging, per shard range (``_results/<shard>.json``): what
the reader read, the Parquet files of rows (and of dead letters) it wrote, and, when decoding,
what the records became. Written by the read step once Spark reports a task attempt
successful; read by the publish step and by recovery that completes a publish.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.shards.reader import ReadResult
from kinesis_batch.storage.place import Place

#: The folder, in a batch's data for new routes, of the records held until their tables are decided.
HELD = "_held"


@dataclass(frozen=True)
class StagedFile:
    """One Parquet file of a batch: its path in the data place (``COLUMN=VALUE/part-...`` in
    hive folders), its rows, (decoded rows) its schema as text
    (kinesis_batch.columns.schema_to_text), its partition value when the table is
    partitioned (kinesis_batch.storage.layout: None is the null partition), its columns'
    statistics as JSON (kinesis_batch.storage.file_stats; None: not known), and in a routed run
    the route whose table it goes to (its name is then in that table's data place)."""

    name: str
    rows: int
    schema: str | None = None
    partition: str | None = None
    stats: str | None = None
    route: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"rows": self.rows, **({"schema": self.schema} if self.schema else {})}
        body |= {"stats": self.stats} if self.stats else {}
        body |= {"route": self.route} if self.route else {}
        return body | ({"partition": self.partition} if self.partition is not None else {})


@dataclass(frozen=True)
class RangeResult:
    """One range: ``read``, the reader's result; ``files`` of rows, ``dead_letter_files``;
    ``counts``: records, rows, dead_letters, filtered, reasons (decoded ranges only);
    ``held_files``: routed, new routes' records kept as dead letters until the read step
    decides on their tables (kinesis_batch.run.route), then none."""

    read: ReadResult
    files: tuple[StagedFile, ...] = ()
    dead_letter_files: tuple[StagedFile, ...] = ()
    counts: dict[str, Any] = field(default_factory=dict)
    held_files: tuple[StagedFile, ...] = ()

    def to_json(self) -> str:
        return json.dumps(
            {
                **asdict(self.read),
                "files": {f.name: f.to_json() for f in self.files},
                "dead_letter_files": {f.name: f.to_json() for f in self.dead_letter_files},
                "counts": self.counts,
                **({"held_files": {f.name: f.to_json() for f in self.held_files}} if self.held_files else {}),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> RangeResult:
        body = json.loads(text)
        files = _files(body.pop("files", {}))
        legacy = body.pop("file", None)  # a staging of the version before decoding: one file, no counts
        if legacy:
            files += (StagedFile(legacy, int(body.get("records", 0))),)
        dead = _files(body.pop("dead_letter_files", {}))
        counts = body.pop("counts", {}) or {}
        held = _files(body.pop("held_files", {}))
        return cls(ReadResult(**body), files, dead, counts, held)


def staged(results: Place) -> dict[str, RangeResult]:
    """Every range's result in ``results``, by shard."""
    found = {}
    for name in results.list():
        if name.endswith(".json") and not name.startswith("."):
            text = results.read_text(name)
            if text is None:  # the staging went (a publish or a discard finished meanwhile)
                raise InvalidStateError(f"{results.uri} changed while it was read: {name} is gone")
            found[name.removesuffix(".json")] = RangeResult.from_json(text)
    return found


def read_results(results: Place) -> dict[str, ReadResult]:
    """What each range read (the reader's own ReadResult), by shard."""
    return {shard: result.read for shard, result in staged(results).items()}


def files_of(results: Mapping[str, RangeResult], *, dead_letters: bool = False) -> list[StagedFile]:
    """The files of rows (or of dead-letter rows) that ``results`` name, by name: the batch's only ones."""
    found = (f for result in results.values() for f in (result.dead_letter_files if dead_letters else result.files))
    return sorted(found, key=lambda f: f.name)


def staged_files(results: Place) -> list[StagedFile]:
    """The batch's files of rows, as its staged results name them."""
    return files_of(staged(results))


def staged_dead_letters(results: Place) -> list[StagedFile]:
    """The batch's files of dead-letter rows, as its staged results name them."""
    return files_of(staged(results), dead_letters=True)


def _files(body: dict[str, Any]) -> tuple[StagedFile, ...]:
    return tuple(
        StagedFile(name, int(v.get("rows", 0)), v.get("schema"), v.get("partition"), v.get("stats"), v.get("route"))
        for name, v in sorted(body.items())
    )


__all__ = [
    "HELD",
    "RangeResult",
    "StagedFile",
    "files_of",
    "read_results",
    "staged",
    "staged_dead_letters",
    "staged_files",
]
