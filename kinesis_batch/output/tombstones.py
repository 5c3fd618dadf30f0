"""Where a table of current state keeps its deletes: so that a change older than a delete, come
late, never brings the row back. No plain read of the table shows them: they are Parquet files
in the output's bookkeeping (``_tombstones/``), one per batch that deleted, which maintenance
compacts and expires.

Contract:
- A tombstone is a fact of the source (key K was deleted at this order), so it is written
  before the batch's merge commits and stays true if that batch is discarded and read again:
  the same records make the same tombstones. Writing one batch's file twice writes the same.
- :meth:`Tombstones.read` answers for the keys asked, from every file there. An expiry beside
  it writes its compacted file before it deletes the old ones, so the facts are always in some
  file: a file gone between the listing and its read is listed again.
- :meth:`Tombstones.expire` drops those older than the hours given, by the delete's arrival time,
  and compacts the rest into one file; it deletes only the files it read, so a batch's file
  written meanwhile stays.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kinesis_batch.changes.fold import among, newest
from kinesis_batch.columns import (
    ARRIVAL,
    CHANGE_POSITION,
    LINEAGE_DEPTH,
    SEQUENCE_NUMBER,
    SHARD_ID,
    SUB_SEQUENCE_NUMBER,
)
from kinesis_batch.errors import DependencyError
from kinesis_batch.storage.place import Place

FOLDER = "_tombstones"
#: How many tombstone files are read at once.
READERS = 16
#: What a tombstone keeps beside the key: the delete's order, its shard, and when it arrived.
KEPT = (
    SHARD_ID.name,
    SEQUENCE_NUMBER.name,
    SUB_SEQUENCE_NUMBER.name,
    LINEAGE_DEPTH.name,
    ARRIVAL.name,
    CHANGE_POSITION.name,
)


class Tombstones:
    def __init__(self, bookkeeping: Place) -> None:
        self.place = bookkeeping.child(FOLDER)

    def write(self, batch_id: str, deletes: pa.Table, key: Sequence[str]) -> None:
        """The batch's deletes (rows with the key columns and KEPT)."""
        if deletes.num_rows == 0:
            return
        self.place.make_dirs()
        with self.place.open_part(f"batch-{batch_id}.parquet") as stream:
            pq.write_table(deletes.select([*key, *KEPT]), stream)

    def read(self, key: Sequence[str], keys: pa.Table | None = None) -> pa.Table | None:
        """The tombstones of ``keys`` (a table of key columns; None: all); None when there are none."""
        found = self._read_all()[1]
        if keys is None or found is None or found.num_rows == 0:
            return found
        if len(key) == 1:
            return found.filter(pc.is_in(found.column(key[0]), value_set=keys.column(key[0]).combine_chunks()))
        return among(found, keys, key)  # not a join: a join refuses the list column CHANGE_POSITION

    def expire(self, hours: float, now: datetime) -> tuple[int, int]:
        """Compact every file into one, without the tombstones older than ``hours``; returns
        (kept, expired)."""
        names, found = self._read_all()
        if found is None:
            return 0, 0
        cutoff = pa.scalar(now - timedelta(hours=hours), type=ARRIVAL.type)
        young = found.filter(pc.greater_equal(found.column(ARRIVAL.name), cutoff))
        key = [name for name in found.schema.names if name not in KEPT]  # the files hold the key and KEPT
        kept = newest(young, key).rows.select([*key, *KEPT])
        if kept.num_rows:
            with self.place.open_part(f"compacted-{uuid.uuid4().hex}.parquet") as stream:
                pq.write_table(kept, stream)
        for name in names:
            self.place.delete(name)
        return kept.num_rows, found.num_rows - young.num_rows

    def _read_all(self, attempts: int = 5) -> tuple[list[str], pa.Table | None]:
        """Every file's name and their rows together (None: no file).

        The files are read side by side: until maintenance compacts them there is one per batch
        that deleted (a week of hourly batches: 168), and on S3 each read is a round trip."""
        filesystem = self.place.filesystem()

        def one(name: str) -> pa.Table:
            return pq.read_table(self.place.child(name).path, filesystem=filesystem)

        for _ in range(attempts):
            names = self._files()
            if not names:
                return [], None
            try:
                with ThreadPoolExecutor(min(READERS, len(names))) as pool:
                    tables = list(pool.map(one, names))
            except OSError:  # S3 says a missing object in its own words: look again
                if set(self._files()) >= set(names):
                    raise
                continue  # an expiry compacted them meanwhile: its file holds the same facts
            return names, pa.concat_tables(tables, promote_options="permissive")
        raise DependencyError(f"the tombstones at {self.place.uri} kept changing while read ({attempts} tries)")

    def _files(self) -> list[str]:
        if not self.place.exists():
            return []
        return [name for name in self.place.list() if name.endswith(".parquet") and not name.startswith(".")]


__all__ = ["FOLDER", "KEPT", "Tombstones"]
