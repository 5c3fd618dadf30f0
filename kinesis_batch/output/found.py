"""Pure: what an output location already holds, from the names at its top, and whether a format
may write there. Every command checks it before it writes a file or takes a lease, so a run never
writes beside another format's table (whose readers would never see those rows, and whose
vacuum would delete them) nor into somebody else's folder.

==============================  ===================================================  ============
what is there                   how it is told                                       who may write
==============================  ===================================================  ============
nothing                         no name but kinesis-batch's bookkeeping              every format
a Delta table                   ``_delta_log/``                                      delta
an Iceberg table                ``metadata/`` holding ``*.metadata.json``            iceberg
kinesis-batch's Parquet batches ``_partition_by``, ``_staging/``, ``batch_id=*/``    parquet
somebody else's files           anything else                                        nobody
==============================  ===================================================  ============

An Iceberg output names a table of a catalog: the catalog says whether it is a table; the place
checked is where a new one would be made.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kinesis_batch.errors import ForeignOutputError

NOTHING, DELTA, ICEBERG, PARQUET = "nothing", "delta", "iceberg", "parquet"
FOREIGN = "foreign"
#: kinesis-batch's own bookkeeping (the marker archive, the last maintenance): in every format.
BOOKKEEPING = "_kinesis_batch"
SAID = {
    DELTA: "a Delta table (_delta_log/)",
    ICEBERG: "an Iceberg table (metadata/)",
    PARQUET: "kinesis-batch's Parquet batches (batch_id=... folders)",
}


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


def what_is(listing: Listing) -> str:
    """NOTHING, DELTA, ICEBERG, PARQUET or FOREIGN: what ``listing`` shows, the most telling sign
    first (a Delta table with stray Parquet batches beside it is a Delta table)."""
    files, folders = listing.files, listing.folders
    if "_delta_log" in folders:
        return DELTA
    if "metadata" in folders and any(name.endswith(".metadata.json") for name in listing.metadata):
        return ICEBERG
    if "_partition_by" in files or "_staging" in folders or any(name.startswith("batch_id=") for name in folders):
        return PARQUET
    if not files and not folders - {BOOKKEEPING}:
        return NOTHING
    return FOREIGN


def check_writable(format: str, listing: Listing, where: str) -> None:
    """Raise ForeignOutputError, in one line, unless ``format`` may write at ``where``."""
    found = what_is(listing)
    if found in (NOTHING, format):
        return
    if found == FOREIGN:
        shown = sorted(listing.folders | listing.files)
        names = ", ".join(shown[:3]) + (", ..." if len(shown) > 3 else "")
        raise ForeignOutputError(
            f"{where} holds files that are none of kinesis-batch's ({names}): a {format} output there would mix "
            "with them, and maintenance would take theirs for its own; name an empty or new location"
        )
    raise ForeignOutputError(
        f"{where} holds {SAID[found]}: a {format} output there would be unseen by its readers and removed as "
        f"orphan files by its maintenance; name another location, or --format {found} to write that table"
    )


__all__ = ["DELTA", "FOREIGN", "ICEBERG", "NOTHING", "PARQUET", "Listing", "check_writable", "what_is"]
