"""The sink interface: where a batch is staged, and how it is published once, atomically, with
the marker recovery needs.

A batch goes through these states, whatever the format::

    staged  --publish-->  committed      (visible to readers, with its commit record)
       \\--discard-->     discarded      (files deleted; a late publish of it must fail)

Contract of every sink:
- **Staging.** :meth:`Sink.staging` holds the run's bookkeeping (``_plan.json``, ``_results/``)
  and :meth:`Sink.data` the Parquet files the Spark tasks write; neither is visible to readers.
- **Publish is exactly once.** :meth:`Sink.publish` makes all of the batch visible in one atomic
  step that also stores the commit record; it returns False, committing nothing, when the
  batch is already committed (a retried or resumed publish).
- **Fencing.** Once :meth:`Sink.discard` returned (another worker's recovery, or a teardown),
  no later :meth:`Sink.publish` of that batch can succeed: it raises LeaseLostError. Each
  format states how its own atomic step gives this.
- **Lookup.** :meth:`Sink.committed` answers from the output itself, never from local state,
  so any process (a DAG task, another worker's recovery) gets the same answer.

Two faces: :class:`Sink` is what the run's steps use, and nothing more; :class:`Stored` adds
what maintenance and the status views read of an output as it is kept (its format, layout,
bookkeeping, files, whether it is there and ours, its last batch). Every sink an output opens
is a :class:`Stored`; the run's steps see it as a :class:`Sink`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import pyarrow as pa

from kinesis_batch.columns import RAW, Columns
from kinesis_batch.errors import NOTHING_PUBLISHED, IllegalArgumentError, LeaseLostError
from kinesis_batch.output.datafiles import DataFile
from kinesis_batch.output.formats import drops_identity
from kinesis_batch.output.found import check_writable
from kinesis_batch.output.listing import Listing
from kinesis_batch.storage.layout import FileLayout, PartitionBy
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile

MANIFEST = "_plan.json"
RESULTS = "_results"


class Sink(ABC):
    """What the run's steps use of an output, and nothing more (see the module's doc)."""

    #: The format widens a column from int32 to int64 and float32 to float64 in place (a sink of
    #: several tables sets its tables' own).
    widens: bool = True

    #: What readers open, and what the Airflow Asset names: a folder, table path or table URI.
    uri: str

    # -- where a batch lives before it is published -------------------------------------------

    @abstractmethod
    def staging(self, batch_id: str) -> Place:
        """The batch's bookkeeping: its plan manifest and what each task read (``_results/``)."""

    @abstractmethod
    def data(self, batch_id: str) -> Place:
        """Where the Spark tasks write the batch's Parquet files."""

    def write_manifest(self, batch_id: str, body: dict[str, Any]) -> None:
        """The run's plan, for steps that run in other processes (Airflow tasks)."""
        self.staging(batch_id).write_text(MANIFEST, json.dumps(body, indent=1, sort_keys=True))

    def read_manifest(self, batch_id: str) -> dict[str, Any] | None:
        text = self.staging(batch_id).read_text(MANIFEST)
        return json.loads(text) if text is not None else None

    def results(self, batch_id: str) -> Place:
        return self.staging(batch_id).child(RESULTS)

    def clear_staged_rows(self, batch_id: str) -> None:
        """Forget what an earlier attempt of the read step wrote (rows and results), keep the plan."""
        self.results(batch_id).delete_all()
        data = self.data(batch_id)
        for name in data.walk():
            if _base(name).startswith(("part-", ".part-")):
                data.delete(name)

    # -- the format's own -----------------------------------------------------------------------

    @abstractmethod
    def prepare(self, columns: Columns = RAW, partition_by: str | None = None) -> None:
        """Create the output if it is missing, for ``columns`` (raw rows, dead letters, or decoded
        rows with their declared fields), partitioned by ``partition_by`` (``--partition-by``
        text; None: the output's own layout, or for a new one the default: day of arrival);
        check it can be written and has those columns (adding the declared ones a decoded table
        lacks) and that layout. Raises InvalidStateError / IllegalArgumentError with one line
        saying what is wrong."""

    @abstractmethod
    def file_layout(self, target_bytes: int) -> FileLayout:
        """How the Spark tasks write this output's files: by its partitions, rolled at
        ``target_bytes``."""

    @abstractmethod
    def publish(self, record: CommitRecord, files: Sequence[StagedFile]) -> bool:
        """Make ``files`` (in :meth:`data`) visible with ``record``, in one atomic step, the
        table's schema grown by what decoded files add (kinesis_batch.output.evolve). True if
        this call published; False if the batch already was (nothing is committed). Raises
        LeaseLostError if the batch was discarded."""

    def fields(self) -> pa.Schema | None:
        """A decoded table's fields as they are now (None: none known yet): what the Spark tasks
        fit rows to."""
        return None

    @abstractmethod
    def committed(self, batch_id: str) -> CommitRecord | None:
        """The commit record of a published batch, or None if it is not published."""

    @abstractmethod
    def discard(self, batch_id: str, *, fence: bool = True) -> bool:
        """Delete an unpublished batch's files and bookkeeping; True if there was a staged batch.
        With ``fence``, a later publish of the batch is made impossible first (recovery and
        teardown); without it (the run itself found nothing to publish) nothing is recorded.
        A published batch is left alone (its bookkeeping is removed)."""

    def location(self, batch_id: str) -> str:
        """Where a published batch is, for the run report."""
        return self.uri

    def dead_letters(self) -> Stored | None:
        """Where records that do not decode go (None: raw rows, which always do)."""
        return None

    def writes_batch_column(self) -> bool:
        """The Spark tasks write ``batch_id`` into the rows (the parquet format has it from its
        folder names instead)."""
        return True


class Stored(Sink):
    """An output as it is kept: the run's face (:class:`Sink`) and what maintenance and the
    status views read of it. Every sink an :class:`~kinesis_batch.output.Output` opens is one."""

    format: ClassVar[str]

    def table_sink(self) -> Stored:
        """The sink of the rows themselves (a run's one table; this one otherwise)."""
        return self

    @abstractmethod
    def partitioning(self) -> PartitionBy | None:
        """The output's layout, as it is now (None: not partitioned)."""

    def file_layout(self, target_bytes: int) -> FileLayout:
        """How the Spark tasks write this output's files: by its partitions, rolled at
        ``target_bytes``; an identity partition's column as the format keeps it (formats.drops_identity)."""
        return FileLayout(self.partitioning(), drops_identity(self.format), target_bytes)

    @abstractmethod
    def last_batch(self) -> CommitRecord | None:
        """The newest batch this consumer published to the output, for status views."""

    @abstractmethod
    def bookkeeping(self) -> Place:
        """The output's own bookkeeping, which readers never read: the last maintenance and
        (table formats) the marker archive (kinesis_batch.output.markers)."""

    @abstractmethod
    def check_place(self) -> None:
        """Refuse, in one line and having written nothing, an output location that holds another
        format's table or files that are none of kinesis-batch's (ForeignOutputError;
        kinesis_batch.output.found). Read-only; every command calls it before anything else of
        the output (``prepare`` first of all)."""

    @abstractmethod
    def exists(self) -> bool:
        """Whether the output is there already (a table, or a run's folder): read-only."""

    @abstractmethod
    def is_ours(self) -> bool:
        """Whether kinesis-batch made this output or published into it: maintenance touches
        nothing else (a mistaken ``--output`` may name anybody's folder or table)."""

    @abstractmethod
    def data_files(self) -> list[DataFile]:
        """The output's data files as they are now (the published ones only), from the output
        itself: what maintenance compacts and the status views count."""

    def _keep_only(self, batch_id: str, files: set[str]) -> dict[str, int]:
        """Delete the staged Parquet files not in ``files`` (what failed or lost attempts left);
        return the sizes of those of ``files`` that are there."""
        data = self.data(batch_id)
        sizes = data.sizes(recursive=True)
        for name in sizes:
            if "part-" in _base(name) and name not in files:
                data.delete(name)
        return {name: size for name, size in sizes.items() if name in files}


def check_place_of(format: str, place: Place, where: str) -> None:
    """:meth:`Sink.check_place` of a format whose output is a folder (``place``)."""
    files, folders = place.top()
    metadata = place.child("metadata").list() if "metadata" in folders else []
    check_writable(format, Listing.of(files, folders, metadata), where)


def _base(path: str) -> str:
    return path.rpartition("/")[2]


def discarded(batch_id: str) -> LeaseLostError:
    """What a late publish of a discarded batch raises (the run lost its leases meanwhile)."""
    return LeaseLostError(
        f"batch {batch_id} was discarded by another worker's recovery after this run's leases lapsed; "
        f"{NOTHING_PUBLISHED}"
    )


def check_batch_id(batch_id: str) -> str:
    if not batch_id or "/" in batch_id or batch_id.startswith((".", "_")):
        raise IllegalArgumentError(f"unusable batch id {batch_id!r}")
    return batch_id


__all__ = ["MANIFEST", "RESULTS", "Sink", "Stored", "check_batch_id", "check_place_of", "discarded"]
