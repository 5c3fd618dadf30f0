"""The table of formats: each format's facts in one row, read by every part that differs by
format (opening a sink, the --format/--output/--catalog checks, which formats can hold a table
of current state, how a backfill's own output is named, how maintenance finds its maintainer).

A format named ``NAME`` is one row here and its parts:

- ``kinesis_batch.output.NAME``: ``open_table(where, *, catalog, app, stream, s3, merge)``, the
  format's sink (kinesis_batch.output.sink), with its merge when ``merges`` (the publish mode:
  kinesis_batch.output.changes);
- ``kinesis_batch.maintenance.NAME``: ``maintainer(sink, maintenance_id)``, its side of each
  maintenance step (kinesis_batch.maintenance.maintain.Maintainer).

No other module names a format.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.output.listing import Listing

#: What a catalog-named table's --output looks like.
_NAMESPACED = re.compile(r"^[^./]+(\.[^./]+)+$")


@dataclass(frozen=True)
class Format:
    """One format's facts.

    ``catalog``: its tables are named NAMESPACE.TABLE in a pyiceberg catalog (``--catalog``),
    not by a path; ``on_s3``: its publish is atomic on S3 (else ``why_not_s3`` says why not);
    ``merges``: it can be a table of current state (else ``why_no_merge``); ``drops_identity``:
    its files leave out an identity partition's column (the folder or the table's metadata holds
    it); ``backfill``: a backfill's own output next to ``(main output, backfill id)``;
    ``sign``: a location's top shows its table (or folder of batches), which ``held`` names in a
    line; the signs are read in the order of ``telling``, highest first
    (kinesis_batch.output.found); ``extra``: the package extra of its table library ("" when
    it needs none), which the nodes' environment carries (kinesis_batch.environment)."""

    name: str
    catalog: bool
    on_s3: bool
    merges: bool
    drops_identity: bool
    backfill: Callable[[str, str], str]
    sign: Callable[[Listing], bool]
    held: str
    telling: int = 0
    extra: str = ""
    why_not_s3: str = ""
    why_no_merge: str = ""

    def parts(self) -> Any:
        """The module of the format's sink: ``open_table``."""
        return import_module(f"kinesis_batch.output.{self.name}")

    def maintenance(self) -> Any:
        """The module of the format's maintenance: ``maintainer``."""
        return import_module(f"kinesis_batch.maintenance.{self.name}")

    def check(self, output: str, catalog: str | None) -> None:
        """The --output/--catalog combinations this format cannot work with, each one line."""
        if catalog and not self.catalog:
            raise IllegalArgumentError(f"--catalog goes with --format {' or '.join(named(CATALOGED))}")
        if not self.on_s3 and output.startswith(("s3://", "s3a://")):
            raise IllegalArgumentError(
                f"--output {output}: the {self.name} format {self.why_not_s3}; write to S3 with "
                + " or ".join(f"--format {name}" for name in named(ON_S3))
            )
        if self.catalog and not _NAMESPACED.match(output):
            raise IllegalArgumentError(
                f"--output {output!r}: an {self.name.capitalize()} table is named NAMESPACE.TABLE "
                "(for example analytics.clicks)"
            )

    def check_merges(self, changes: str) -> None:
        """Refuse ``--changes`` on a format that cannot merge, in one line."""
        if not self.merges:
            merging = " or ".join(named(MERGING))
            raise IllegalArgumentError(f"--changes {changes} needs --format {merging}: {self.why_no_merge}")


def _beside(separator: str, lower: bool = False) -> Callable[[str, str], str]:
    def named(main: str, backfill_id: str) -> str:
        suffix = re.sub(r"[^a-z0-9_]", "_", backfill_id.lower()) if lower else backfill_id
        return f"{main.rstrip('/')}{separator}{suffix}"

    return named


def _parquet_batches(top: Listing) -> bool:
    return (
        "_partition_by" in top.files
        or "_staging" in top.folders
        or any(name.startswith("batch_id=") for name in top.folders)
    )


def _delta_log(top: Listing) -> bool:
    return "_delta_log" in top.folders


def _iceberg_metadata(top: Listing) -> bool:
    return "metadata" in top.folders and any(name.endswith(".metadata.json") for name in top.metadata)


ROWS = (
    Format(
        "parquet",
        catalog=False,
        on_s3=False,
        merges=False,
        drops_identity=True,
        backfill=_beside("-backfill-"),
        sign=_parquet_batches,
        held="kinesis-batch's Parquet batches (batch_id=... folders)",
        why_not_s3="publishes by renaming a folder, and S3 has no atomic rename",
        why_no_merge="parquet folders cannot be updated atomically",
    ),
    Format(
        "delta",
        catalog=False,
        on_s3=True,
        merges=True,
        drops_identity=True,
        backfill=_beside("_backfill_"),
        sign=_delta_log,
        held="a Delta table (_delta_log/)",
        telling=1,  # a table's sign tells more than stray batch folders beside it
        extra="delta",
    ),
    Format(
        "iceberg",
        catalog=True,
        on_s3=True,
        merges=True,
        drops_identity=False,  # pyiceberg reads a file's partition from its statistics: the files keep it
        backfill=_beside("_backfill_", lower=True),
        sign=_iceberg_metadata,
        held="an Iceberg table (metadata/)",
        telling=1,
        extra="iceberg",
    ),
)
BY_NAME = {row.name: row for row in ROWS}
#: The formats' names, in the order the help shows them.
FORMATS = tuple(BY_NAME)
CATALOGED = tuple(row for row in ROWS if row.catalog)
ON_S3 = tuple(row for row in ROWS if row.on_s3)
MERGING = tuple(row for row in ROWS if row.merges)


def named(rows: tuple[Format, ...]) -> list[str]:
    return [row.name for row in rows]


def implied(output: str) -> str | None:
    """The one format ``output`` can be, where only one can be there (an s3:// path: the only
    format that publishes there by path); None where more than one can."""
    if not output.startswith(("s3://", "s3a://")):
        return None
    candidates = [row.name for row in ON_S3 if not row.catalog]
    return candidates[0] if len(candidates) == 1 else None


def format_of(name: str) -> Format:
    """The row of ``--format NAME``; one line naming the formats when there is none."""
    row = BY_NAME.get(name)
    if row is None:
        raise IllegalArgumentError(f"--format: {name!r} is not one of {', '.join(FORMATS)}")
    return row


def drops_identity(format: str) -> bool:
    """Whether a format's files leave out an identity partition's column (its row's fact)."""
    return format_of(format).drops_identity


def validate_output(format: str, output: str, catalog: str | None) -> None:
    """The --format/--output/--catalog combinations that cannot work, each said in one line."""
    format_of(format).check(output, catalog)


__all__ = [
    "FORMATS",
    "MERGING",
    "ROWS",
    "Format",
    "drops_identity",
    "format_of",
    "named",
    "validate_output",
]
