"""A decoding run's two outputs as one sink: the table (``main``) and its dead-letter output
(``dead``), the same format, published together so that each record of a batch is a row of one
of them exactly once.

How the pair keeps the sink contract:
- **Staging** is the table's: the plan, the results, the table's files; the dead letters' files
  are in the dead-letter output's own data place.
- **Publish** goes dead letters first, then the table; a batch without dead letters publishes
  the table only. The table always gets the batch's commit record (even with no rows: every
  record a dead letter).
- **Committed** means either output has the batch. If only the dead-letter output has it (a
  crash between the two publishes), :meth:`committed` completes the table's publish from the
  staging before it answers, so every caller (the publish step retried, recovery, the teardown)
  finds the batch in both.
- **Discard** fences the dead-letter output first: a late publish of the batch then fails at its
  first step and never reaches the table. If the dead-letter output was published meanwhile,
  the batch is not discarded but completed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from kinesis_batch.columns import DEAD_LETTERS, RAW, Columns
from kinesis_batch.errors import InvalidStateError, KinesisBatchError
from kinesis_batch.events import Event, emit
from kinesis_batch.output.datafiles import DataFile
from kinesis_batch.output.sink import Stored, discarded
from kinesis_batch.storage.layout import FileLayout, PartitionBy
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile, staged_dead_letters, staged_files

#: The step between the two publishes (for observers: the crash tests stop a run right there).
DEAD_LETTERS_PUBLISHED = "dead_letters_published"


class PairedSink(Stored):
    format = "paired"

    def __init__(self, main: Stored, dead: Stored) -> None:
        self.main, self.dead = main, dead
        self.uri = main.uri

    def table_sink(self) -> Stored:
        return self.main

    def dead_letters(self) -> Stored | None:
        return self.dead

    def writes_batch_column(self) -> bool:
        return self.main.writes_batch_column()

    # -- staging: the table's ---------------------------------------------------------------------

    def staging(self, batch_id: str) -> Place:
        return self.main.staging(batch_id)

    def data(self, batch_id: str) -> Place:
        return self.main.data(batch_id)

    def write_manifest(self, batch_id: str, body: dict[str, Any]) -> None:
        """The plan, in the table's staging; the dead-letter output gets a staging of its own
        too, so that its maintenance sees the batch's dead letters as staged, not as orphans."""
        self.main.write_manifest(batch_id, body)
        self.dead.write_manifest(batch_id, {"batch": batch_id, "table": self.main.uri})

    def read_manifest(self, batch_id: str) -> dict[str, Any] | None:
        return self.main.read_manifest(batch_id)

    def clear_staged_rows(self, batch_id: str) -> None:
        self.main.clear_staged_rows(batch_id)
        self.dead.clear_staged_rows(batch_id)

    # -- the two outputs --------------------------------------------------------------------------

    def prepare(self, columns: Columns = RAW, partition_by: str | None = None) -> None:
        """The table with the layout asked for; the dead letters with their own (a new one's:
        by day of arrival, as they have no decoded field). Both places are checked first: neither
        is made when the other is not ours to write."""
        self.dead.check_place()
        self.main.prepare(columns, partition_by)
        self.dead.prepare(DEAD_LETTERS)

    def partitioning(self) -> PartitionBy | None:
        return self.main.partitioning()

    def file_layout(self, target_bytes: int) -> FileLayout:
        return self.main.file_layout(target_bytes)

    def fields(self) -> pa.Schema | None:
        return self.main.fields()

    def publish(self, record: CommitRecord, files: Sequence[StagedFile]) -> bool:
        batch_id = record.batch_id
        try:
            dead_files = staged_dead_letters(self.main.results(batch_id))
        except InvalidStateError:  # the staging went while it was read: the batch was published or discarded
            if self.main.committed(batch_id) is not None:
                return False
            raise discarded(batch_id) from None
        if dead_files:
            self.dead.publish(record, dead_files)
            emit(Event(DEAD_LETTERS_PUBLISHED, batch_id))
        published = self.main.publish(record, files)
        if not dead_files:
            self._tidy_dead(batch_id)
        return published

    def _tidy_dead(self, batch_id: str) -> None:
        """A batch of no dead letter leaves nothing in the dead-letter output: its staging (the
        plan) and its empty data place go once the table holds the batch. (With dead letters,
        the dead-letter output's own publish tidies them.)"""
        self.dead.staging(batch_id).delete_all()
        self.dead.data(batch_id).delete_all()

    def committed(self, batch_id: str) -> CommitRecord | None:
        record = self.main.committed(batch_id)
        if record is not None:
            return record
        record = self.dead.committed(batch_id)
        if record is None:
            return None
        try:  # a crash came between the two publishes, or the publisher is between them right now
            self.main.publish(record, staged_files(self.main.results(batch_id)))
        except KinesisBatchError:
            if self.main.committed(batch_id) is None:  # not the publisher's own completion meanwhile
                raise
        return self.main.committed(batch_id) or record

    def discard(self, batch_id: str, *, fence: bool = True) -> bool:
        if self.committed(batch_id) is not None:
            self.main.discard(batch_id, fence=fence)  # only its bookkeeping goes
            if self.dead.committed(batch_id) is None:
                self._tidy_dead(batch_id)
            return False
        discarded = self.dead.discard(batch_id, fence=fence)
        if not discarded and self.committed(batch_id) is not None:  # a late publish got there first
            self.main.discard(batch_id, fence=fence)
            return False
        return self.main.discard(batch_id, fence=fence) or discarded

    def last_batch(self) -> CommitRecord | None:
        return self.main.last_batch()

    def bookkeeping(self) -> Place:
        return self.main.bookkeeping()

    def data_files(self) -> list[DataFile]:
        return self.main.data_files()

    def check_place(self) -> None:
        self.main.check_place()
        self.dead.check_place()

    def exists(self) -> bool:
        return self.main.exists()

    def is_ours(self) -> bool:
        return self.main.is_ours()

    def location(self, batch_id: str) -> str:
        return self.main.location(batch_id)


__all__ = ["DEAD_LETTERS_PUBLISHED", "PairedSink"]
