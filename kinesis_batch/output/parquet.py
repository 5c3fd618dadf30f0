"""The ``parquet`` sink: hive-style batch folders under a root on a local or HDFS-like file system.

Layout (readers ignore paths that start with ``_``)::

    ROOT/_staging/<batch>/            part-<shard>-<uuid>.parquet from the Spark tasks, _results/,
                                      _plan.json, and _commit.json once the batch is complete
    ROOT/batch_id=<batch>/            the published batch (hive-style: readers get a batch_id column)
    ROOT/_discarded/<batch>-<nonce>/  a staging that lost (deleted right after)
    ROOT/_fields                      decoded rows: the fields the batches have had (types kept in line)
    ROOT/_partition_by                the folder's layout (kinesis_batch.storage.layout); partitioned
                                      batches hold hive folders: batch_id=<batch>/arrival_day=<day>/

How it keeps the sink contract:
- :meth:`ParquetSink.publish` is one ``rename`` of the staging directory, with the commit record
  written inside it first: all of the batch becomes visible at once, with its record, or none.
- Fencing: :meth:`ParquetSink.discard` is a ``rename`` of the same directory, so when a late
  publish races another worker's discard, exactly one of the two renames succeeds and both
  learn which. S3 has no rename: an ``s3://`` root is refused (the table formats serve S3).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from kinesis_batch.aws import S3Settings
from kinesis_batch.columns import RAW, Columns, fields_of, schema_from_text, schema_to_text
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.output.changes import Merge
from kinesis_batch.output.datafiles import DataFile
from kinesis_batch.output.evolve import conflicts, merged, normalize
from kinesis_batch.output.formats import validate_output
from kinesis_batch.output.sink import MANIFEST, Stored, check_batch_id, check_place_of, discarded
from kinesis_batch.storage.layout import NULL_FOLDER, PartitionBy, choose, spelled
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.records import CommitRecord
from kinesis_batch.storage.staged import StagedFile

COMMIT_RECORD = "_commit.json"
FIELDS = "_fields"  # the decoded fields the batches have had (readers skip paths starting with _)
PARTITION_BY = "_partition_by"


class ParquetSink(Stored):
    format = "parquet"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        validate_output(self.format, str(root), None)  # refuses s3://
        self.root = Path(root).absolute()
        self.uri = str(self.root)

    def staging(self, batch_id: str) -> Place:
        return Place(str(self.root / "_staging" / check_batch_id(batch_id)))

    def data(self, batch_id: str) -> Place:
        return self.staging(batch_id)

    def writes_batch_column(self) -> bool:
        return False  # readers get batch_id from the batch_id=... folder

    def published(self, batch_id: str) -> Path:
        return self.root / f"batch_id={check_batch_id(batch_id)}"

    def location(self, batch_id: str) -> str:
        return str(self.published(batch_id))

    def prepare(self, columns: Columns = RAW, partition_by: str | None = None) -> None:
        """Create the root if needed and prove we can write in it, or say why not; settle the
        folder's layout; for decoded rows, check declared fields against those the folder's
        batches have."""
        self.check_place()
        try:
            (self.root / "_staging").mkdir(parents=True, exist_ok=True)
            probe = self.root / "_staging" / f".probe-{uuid.uuid4().hex}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise InvalidStateError(f"output root {self.root} is not writable: {exc.strerror or exc}") from exc
        held, wanted = self._rows_held(), _kind(columns.schema(batch_column=False).names)
        if held is not None and held != wanted:  # a folder has no schema to refuse them: readers would mix both
            raise InvalidStateError(f"{self.root} holds {held}; {wanted} need a folder of their own")
        said = Place(str(self.root)).read_text(PARTITION_BY)
        new = said is None and held is None  # a folder of batches from before layouts is unpartitioned
        partition = choose(partition_by, PartitionBy.parse(said) if said else None, new=new, where=str(self.root))
        if partition is not None and new:
            partition.check_source(columns.schema(batch_column=False), str(self.root))
        if said is None:
            Place(str(self.root)).write_text(PARTITION_BY, spelled(partition))
        if columns.decoded and columns.fields is not None:
            known = self.fields()
            wrong = conflicts(known, columns.fields) if known is not None else []
            if wrong:
                raise InvalidStateError(f"{self.root} has batches whose columns conflict ({'; '.join(wrong)})")
            self._remember(columns.fields)

    def partitioning(self) -> PartitionBy | None:
        said = Place(str(self.root)).read_text(PARTITION_BY)
        return PartitionBy.parse(said) if said else None

    def _rows_held(self) -> str | None:
        """What the published batches' files hold (by the first file found), or None."""
        import pyarrow.parquet as pq

        for batch in self.published_batches():
            for path in sorted(self.published(batch).rglob("*.parquet")):
                return _kind(pq.read_schema(path).names)
        return None

    def fields(self) -> pa.Schema | None:
        """The decoded fields the folder's batches have had, as the last publishes recorded them
        (``_fields``): a folder has no table schema, so this keeps later batches' types in line."""
        text = Place(str(self.root)).read_text(FIELDS)
        return schema_from_text(text) if text else None

    def _remember(self, fields: pa.Schema) -> None:
        """Grow ``_fields`` by ``fields`` (a conflict keeps what is there: the files say the truth)."""
        known = self.fields()
        try:
            grown = merged(known, [fields], widen=True, where=self.uri) if known is not None else normalize(fields)
        except InvalidStateError:
            return
        if grown != known:
            Place(str(self.root)).write_text(FIELDS, schema_to_text(grown))

    def read_manifest(self, batch_id: str) -> dict[str, Any] | None:
        """The run's plan, from its staging or (once published) from the batch."""
        body = super().read_manifest(batch_id)
        if body is None:
            text = Place(str(self.published(batch_id))).read_text(MANIFEST)
            body = json.loads(text) if text is not None else None
        return body

    def publish(self, record: CommitRecord, files: Sequence[StagedFile]) -> bool:
        batch_id = record.batch_id
        staging, published = Path(self.staging(batch_id).uri), self.published(batch_id)
        if published.exists():
            return False
        if not staging.exists():
            raise discarded(batch_id)
        self._keep_only(batch_id, {file.name for file in files})
        try:
            # Written into the staging folder without creating it: a staging another worker
            # discarded meanwhile must stay gone, not come back holding only a commit record.
            temporary = staging / f".{COMMIT_RECORD}.{uuid.uuid4().hex[:8]}.tmp"
            temporary.write_text(record.to_json())
            temporary.replace(staging / COMMIT_RECORD)
            os.rename(staging, published)
        except FileNotFoundError:
            if published.exists():
                return False
            raise discarded(batch_id) from None
        except OSError as exc:
            if published.exists():
                return False
            raise InvalidStateError(f"cannot publish batch {batch_id}: {exc}") from exc
        schemas = [fields_of(schema_from_text(file.schema)) for file in files if file.schema]
        for schema in schemas:
            self._remember(schema)
        return True

    def discard(self, batch_id: str, *, fence: bool = True) -> bool:
        """The rename is the fence, so ``fence`` changes nothing here."""
        staging = Path(self.staging(batch_id).uri)
        if not staging.exists():
            return False
        graveyard = self.root / "_discarded"
        graveyard.mkdir(parents=True, exist_ok=True)
        target = graveyard / f"{batch_id}-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(staging, target)
        except FileNotFoundError:
            return False
        shutil.rmtree(target, ignore_errors=True)
        return True

    def committed(self, batch_id: str) -> CommitRecord | None:
        text = Place(str(self.published(batch_id))).read_text(COMMIT_RECORD)
        return CommitRecord.from_json(text) if text is not None else None

    def published_batches(self) -> list[str]:
        if not self.root.exists():
            return []
        return sorted(p.name.split("=", 1)[1] for p in self.root.glob("batch_id=*") if p.is_dir())

    def last_batch(self) -> CommitRecord | None:
        records = [record for batch in self.published_batches() if (record := self.committed(batch))]
        return max(records, key=lambda record: record.created_at, default=None)

    def bookkeeping(self) -> Place:
        return Place(str(self.root / "_kinesis_batch"))

    def check_place(self) -> None:
        check_place_of(self.format, Place(str(self.root)), f"--output {self.root}")

    def exists(self) -> bool:
        return self.is_ours()

    def is_ours(self) -> bool:
        """A run's prepare made its ``_staging/`` (and, since layouts, ``_partition_by``)."""
        return (self.root / "_staging").is_dir() or (self.root / PARTITION_BY).is_file()

    def data_files(self) -> list[DataFile]:
        """Every Parquet file of every published batch folder, by path under the root; a batch
        folder is a compaction group of its own (its folder name is its rows' batch id). Rows are
        not counted: that would read every file's footer."""
        found = []
        for batch in self.published_batches():
            folder = f"batch_id={batch}"
            for name, size in Place(str(self.published(batch))).sizes(recursive=True).items():
                if not name.endswith(".parquet") or name.rpartition("/")[2].startswith((".", "_")):
                    continue
                found.append(DataFile(f"{folder}/{name}", size, 0, _partition_value(name), batch))
        return found


def _partition_value(name: str) -> str | None:
    """The partition value of a file's path within its batch folder (``COLUMN=VALUE/part-...``)."""
    folder, _, _ = name.rpartition("/")
    if "=" not in folder:
        return None
    value = unquote(folder.rpartition("=")[2])
    return None if value == NULL_FOLDER else value


def _kind(names: Sequence[str]) -> str:
    if "stage" in names:
        return "dead letters"
    return "raw rows (a data column of record bytes)" if "data" in names else "decoded rows"


def open_table(
    where: str, *, catalog: str | None, app: str, stream: str, s3: S3Settings, merge: Merge | None
) -> ParquetSink:
    """The format's sink (kinesis_batch.output.formats): the folder ``where``. A folder cannot
    merge: its row says so, and Output refuses a ``merge`` before it gets here."""
    return ParquetSink(where)


__all__ = ["COMMIT_RECORD", "ParquetSink", "open_table"]
