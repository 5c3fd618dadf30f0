"""The changes stage of a shard range's pipeline (kinesis_batch.decoding.pipeline), after
conform: each row's operation and position, from its envelope or from the user's key,
``--sequence-by`` and ``--delete-when``; rows that cannot be changes are rejected with the
reason (a dead letter each). Pure, deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa

from kinesis_batch.changes.apply import EXPIRE
from kinesis_batch.changes.model import DELETE, UPSERT, Refused, Unwrapped, to_datetime
from kinesis_batch.changes.settings import ChangeSettings

CHANGES = "changes"  # the stage a dead letter names
_WHOLE = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Marked:
    """The rows kept (indexes into the page's rows), each one's operation and position, and
    the records rejected."""

    kept: list[int]
    ops: list[str]
    positions: list[list[int] | None]
    rejects: list[Refused] = field(default_factory=list)


class ChangeStage:
    """One range's: it learns a DynamoDB stream's key from the first record's ``Keys``, and
    counts what it skips."""

    def __init__(self, settings: ChangeSettings) -> None:
        self.settings = settings
        self.key: tuple[str, ...] = settings.key
        self.skipped: Counter[str] = Counter()

    def mark(
        self,
        rows: Sequence[int],
        names: Sequence[str],
        columns: Sequence[pa.Array],
        envelopes: Mapping[int, Unwrapped] | None,
    ) -> Marked:
        """``rows``: each row's record position; ``names``/``columns``: the conformed fields;
        ``envelopes``: each record's unwrapped envelope (None: ``--changes upsert``)."""
        values = _Fields(names, columns)
        marked = Marked([], [], [])
        for index, position in enumerate(rows):
            try:
                op, where = (
                    self._enveloped(envelopes[position]) if envelopes is not None else self._keyed(values, index)
                )
                self._check_key(values, index)
            except _Reject as reject:
                marked.rejects.append(Refused(position, reject.kind, reject.detail))
                continue
            marked.kept.append(index)
            marked.ops.append(op)
            marked.positions.append(where)
        return _whole_records(marked, rows)

    def _enveloped(self, change: Unwrapped) -> tuple[str, list[int] | None]:
        if change.key:  # DynamoDB's Keys: the stream's key, or the one --key named
            if not self.key:
                self.key = change.key
            elif set(change.key) != set(self.key):
                raise _Reject("key differs", f"Keys has {', '.join(change.key)}; the key is {', '.join(self.key)}")
        op = EXPIRE if change.expired else change.op
        return op, list(change.position) if change.position is not None else None

    def _keyed(self, values: _Fields, index: int) -> tuple[str, list[int] | None]:
        settings = self.settings
        op = UPSERT
        if settings.delete_when is not None:
            name, wanted = settings.delete_when
            value = values.at(name, index)
            if value is not None and _text(value) == wanted.lower():
                op = DELETE
        if settings.sequence_by is None:
            return op, None
        return op, [sequence_value(values.at(settings.sequence_by, index), settings.sequence_by)]

    def _check_key(self, values: _Fields, index: int) -> None:
        for name in self.key:
            if values.at(name, index) is None:
                raise _Reject("no key", f"key column {name} is missing or null")


class _Fields:
    """A page's conformed fields by name, each made Python values once, when first asked (the
    stage reads only the key, --sequence-by and --delete-when)."""

    def __init__(self, names: Sequence[str], columns: Sequence[pa.Array]) -> None:
        self._columns = dict(zip(names, columns, strict=True))
        self._values: dict[str, list[Any]] = {}

    def at(self, name: str, index: int) -> Any:
        """The field's value in row ``index``; None if null or if the page has no such field."""
        if name not in self._columns:
            return None
        if name not in self._values:
            self._values[name] = self._columns[name].to_pylist()
        return self._values[name][index]


def _whole_records(marked: Marked, rows: Sequence[int]) -> Marked:
    """``marked`` without the other rows of a record one of whose rows was refused: a record
    is its rows or one dead letter, never both."""
    refused = {reject.position for reject in marked.rejects}
    if not refused:
        return marked
    keep = [i for i, index in enumerate(marked.kept) if rows[index] not in refused]
    return Marked(
        [marked.kept[i] for i in keep],
        [marked.ops[i] for i in keep],
        [marked.positions[i] for i in keep],
        marked.rejects,
    )


def sequence_value(value: Any, name: str) -> int:
    """A ``--sequence-by`` value as an integer: a whole number as it is (or written as text of
    digits, as producers that quote their numbers do), a time as epoch microseconds (ISO 8601
    text too), a date as epoch days."""
    if isinstance(value, bool) or value is None:
        raise _Reject("unparseable sequence", f"{name} is {'missing or null' if value is None else value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        return int(value)
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    if isinstance(value, datetime | str):
        moment = to_datetime(value)
        if moment is not None:
            return int(moment.timestamp()) * 1_000_000 + moment.microsecond
    elif isinstance(value, date):
        return value.toordinal()
    raise _Reject("unparseable sequence", f"{name} is {value!r}: neither a whole number, an ISO 8601 time nor a date")


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value).lower()


class _Reject(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


__all__ = ["CHANGES", "ChangeStage", "Marked", "sequence_value"]
