"""How a table's rows are split into partitions (``--partition-by``), and which partition a row
is in. Pure: values in, values out.

The forms, as ``--partition-by`` spells them (Iceberg's transform names):

==========================  =====================================  ==========================
``--partition-by``          partition of a row                     Delta / parquet column
==========================  =====================================  ==========================
``day`` (the default)       the UTC day it arrived in Kinesis      ``arrival_day`` (date)
``hour``                    the UTC hour it arrived                ``arrival_hour`` (string)
``day(FIELD)``              the UTC day of a decoded timestamp     ``FIELD_day`` (date)
``hour(FIELD)``             the UTC hour of a decoded timestamp    ``FIELD_hour`` (string)
``identity(FIELD)``         a decoded field's value                ``FIELD`` itself
``none``                    no partitions                          -
==========================  =====================================  ==========================

An hour's text is ``YYYY-MM-DD-HH``, so it sorts and a day's hours share a prefix. Iceberg
derives nothing: its partition spec holds the transform (hidden partitioning), and readers
filter on the timestamp itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc

from kinesis_batch.columns import ARRIVAL
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError

Transform = Literal["day", "hour", "identity"]
NONE = "none"
#: Hive's folder name of a null value, which every hive reader knows.
NULL_FOLDER = "__HIVE_DEFAULT_PARTITION__"
_FORM = re.compile(r"^(day|hour|identity)\(([A-Za-z_][A-Za-z0-9_]*)\)$")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_IDENTITY_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer, pa.types.is_boolean)


@dataclass(frozen=True)
class PartitionBy:
    """A partition transform of one source column (the arrival time, or a decoded field)."""

    transform: Transform
    source: str

    @classmethod
    def parse(cls, text: str) -> PartitionBy | None:
        """``--partition-by`` text -> the transform (None: ``none``); one line naming the forms
        if it is none of them."""
        spelled = text.strip()
        if spelled == NONE:
            return None
        if spelled in ("day", "hour"):
            return cls(spelled, ARRIVAL.name)  # type: ignore[arg-type]
        match = _FORM.match(spelled)
        if match is None:
            raise IllegalArgumentError(
                f"--partition-by {text!r}: use day, hour (of arrival), day(FIELD), hour(FIELD), identity(FIELD) or none"
            )
        transform, source = match.groups()
        if transform == "identity" and source == ARRIVAL.name:
            raise IllegalArgumentError(f"--partition-by {text!r}: one partition per record; use day or hour")
        return cls(transform, source)  # type: ignore[arg-type]

    def __str__(self) -> str:
        if self.source == ARRIVAL.name:
            return self.transform
        return f"{self.transform}({self.source})"

    @property
    def column(self) -> str:
        """The partition column of Delta tables and parquet folders (derived, but for identity)."""
        if self.transform == "identity":
            return self.source
        base = "arrival" if self.source == ARRIVAL.name else self.source
        return f"{base}_{self.transform}"

    @property
    def column_type(self) -> pa.DataType:
        return pa.date32() if self.transform == "day" else pa.string()

    def check_source(self, schema: pa.Schema, where: str) -> None:
        """The source must be a column of the rows, of a type the transform takes; one line if not."""
        if self.source not in schema.names:
            raise IllegalArgumentError(
                f"--partition-by {self}: {where} has no field {self.source} (declare it with --schema, "
                "so that the table has it before the first record)"
            )
        kind = schema.field(self.source).type
        if self.transform == "identity":
            fits = any(check(kind) for check in _IDENTITY_TYPES)
        else:
            fits = pa.types.is_timestamp(kind) or (self.transform == "day" and pa.types.is_date(kind))
        if not fits:
            takes = "a string, integer or boolean" if self.transform == "identity" else "a timestamp"
            raise IllegalArgumentError(
                f"--partition-by {self}: {self.source} is {kind}; {self.transform} takes {takes}"
            )

    # -- rows -----------------------------------------------------------------------------------

    def values(self, rows: pa.RecordBatch | pa.Table) -> pa.Array:
        """Each row's partition value as text (null for a null source)."""
        return self._text(rows.column(self.source))

    def _text(self, source: pa.Array | pa.ChunkedArray) -> pa.Array:
        if self.transform == "identity":
            return pc.cast(source, pa.string())
        if pa.types.is_timestamp(source.type):
            source = pc.cast(source, pa.timestamp(source.type.unit))  # the UTC wall clock
        return pc.strftime(source, format="%Y-%m-%d" if self.transform == "day" else "%Y-%m-%d-%H")

    def split(self, rows: pa.RecordBatch) -> list[tuple[str | None, pa.RecordBatch]]:
        """``rows`` by partition value, each part in the rows' own order."""
        source = rows.column(self.source)
        if self.transform != "identity" and len(source) and not source.null_count:
            # A day or an hour only grows with time: the least and greatest rows' partitions bound
            # every other's, and a catch-up's batch is mostly one partition: no pass per row.
            bounds = pc.min_max(source)
            least, greatest = self._text(pa.array([bounds["min"], bounds["max"]], source.type)).to_pylist()
            if least == greatest:
                return [(least, rows)]
        values = self._text(source)
        distinct = values.unique().to_pylist()
        if len(distinct) == 1:
            return [(distinct[0], rows)]
        parts = []
        for value in distinct:
            mask = pc.is_null(values) if value is None else pc.equal(values, value)
            parts.append((value, rows.filter(mask)))
        return parts

    def text(self, stored: Any) -> str | None:
        """A partition value as a table format stores it (Iceberg: days or hours since the
        epoch as integers, the identity value itself; Delta: a date) as this module's text."""
        if stored is None:
            return None
        if self.transform == "identity":
            return str(stored).lower() if isinstance(stored, bool) else str(stored)
        if isinstance(stored, int):  # Iceberg's day and hour transforms
            moment = EPOCH + (timedelta(days=stored) if self.transform == "day" else timedelta(hours=stored))
        elif isinstance(stored, datetime):
            moment = stored.astimezone(UTC) if stored.tzinfo else stored.replace(tzinfo=UTC)
        elif isinstance(stored, date):
            moment = datetime(stored.year, stored.month, stored.day, tzinfo=UTC)
        else:
            return str(stored)
        return moment.strftime("%Y-%m-%d" if self.transform == "day" else "%Y-%m-%d-%H")

    def folder(self, value: str | None) -> str:
        """The hive folder of a partition value (escaped as hive readers unescape it)."""
        return f"{self.column}={NULL_FOLDER if value is None else quote(value, safe='')}"


def choose(requested: str | None, existing: PartitionBy | None, *, new: bool, where: str) -> PartitionBy | None:
    """The layout a run writes with: what was asked, else the table's own (else, for a new
    table, the default: day of arrival). An existing table keeps its layout: asking for another
    one is InvalidStateError, in one line."""
    if requested is None:
        return DEFAULT if new else existing
    wanted = PartitionBy.parse(requested)
    if not new and wanted != existing:
        raise InvalidStateError(
            f"--partition-by {wanted or NONE}: {where} is partitioned by {existing or NONE}; "
            "a table keeps its layout (omit --partition-by, or write to a new table)"
        )
    return wanted


def spelled(partition: PartitionBy | None) -> str:
    """``--partition-by`` text of a layout."""
    return str(partition) if partition else NONE


@dataclass(frozen=True)
class FileLayout:
    """How a sink wants its tasks' files: partitioned by ``partition`` (None: not), each file
    in its partition's hive folder (``COLUMN=VALUE/``, so that any reader can prune by path), an
    identity partition's column dropped from the files (Delta and parquet folders hold the value
    outside the file) or kept (Iceberg reads it from the file's statistics); each file rolled at
    ``target_bytes``."""

    partition: PartitionBy | None = None
    drop_identity: bool = False
    target_bytes: int = 128 * 1024 * 1024

    def to_json(self) -> dict[str, Any]:
        partition = {"transform": self.partition.transform, "source": self.partition.source} if self.partition else None
        return {"partition": partition, "drop_identity": self.drop_identity, "target_bytes": self.target_bytes}

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> FileLayout:
        partition = body.get("partition")
        return cls(
            PartitionBy(partition["transform"], partition["source"]) if partition else None,
            bool(body.get("drop_identity")),
            int(body.get("target_bytes") or cls.target_bytes),
        )


DEFAULT = PartitionBy("day", ARRIVAL.name)

__all__ = ["DEFAULT", "NONE", "NULL_FOLDER", "FileLayout", "PartitionBy", "choose", "spelled"]
