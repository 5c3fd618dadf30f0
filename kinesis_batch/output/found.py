"""Pure: what an output location already holds, from the names at its top, and whether a format
may write there. Every command checks it before it writes a file or takes a lease, so a run never
writes beside another format's table (whose readers would never see those rows, and whose
vacuum would delete them) nor into somebody else's folder.

==============================  ===================================================  ============
what is there                   how it is told                                       who may write
==============================  ===================================================  ============
nothing                         no name but kinesis-batch's bookkeeping              every format
a format's table or batches     its row's sign (kinesis_batch.output.formats)        that format
somebody else's files           anything else                                        nobody
==============================  ===================================================  ============

The signs today: a Delta table's ``_delta_log/``; an Iceberg table's ``metadata/`` holding
``*.metadata.json``; kinesis-batch's Parquet batches' ``_partition_by``, ``_staging/``,
``batch_id=*/``.

An Iceberg output names a table of a catalog: the catalog says whether it is a table; the place
checked is where a new one would be made.
"""

from __future__ import annotations

from kinesis_batch.errors import ForeignOutputError
from kinesis_batch.output.formats import ROWS, format_of
from kinesis_batch.output.listing import Listing

NOTHING, FOREIGN = "nothing", "foreign"
#: kinesis-batch's own bookkeeping (the marker archive, the last maintenance): in every format.
BOOKKEEPING = "_kinesis_batch"


def what_is(listing: Listing) -> str:
    """NOTHING, a format's name (its table, or its folder of batches, is there) or FOREIGN: what
    ``listing`` shows, the most telling sign first (a Delta table with stray Parquet batches
    beside it is a Delta table). Each format's sign is its row's (kinesis_batch.output.formats)."""
    for row in sorted(ROWS, key=lambda row: -row.telling):
        if row.sign(listing):
            return row.name
    if not listing.files and not listing.folders - {BOOKKEEPING}:
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
        f"{where} holds {format_of(found).held}: a {format} output there would be unseen by its readers and removed as "
        f"orphan files by its maintenance; name another location, or --format {found} to write that table"
    )


__all__ = ["FOREIGN", "NOTHING", "Listing", "check_writable", "what_is"]
