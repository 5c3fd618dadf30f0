"""JSON records into Arrow rows.

A page whose records are each one object on a line is read whole by pyarrow's JSON reader
(kinesis_batch.decoding.formats.json_pages), which gives the same rows as what follows or gives
up on the page. What follows is the general way.

A record holds one JSON object (one row), or an array of objects (a row each). Parsing is
msgspec's, one call per record; the rows become Arrow in one call per page, whose inference
(nested objects as structs, arrays as lists, integers as exact int64, integers mixed with
fractions as float64) types the columns. Text stays text here: the conform stage turns it into a
timestamp where the table says the field is one.

Only a page whose records disagree with each other (a field that is a number in one and text in
another) takes the slow way, record by record: each record's types are unified with those the
table has, the records of the commonest types first, and a record that cannot be is rejected
with the field that changed. (So a new field's type is what most of the page's records say.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import pyarrow as pa

from kinesis_batch.decoding import timestamps
from kinesis_batch.decoding.decoded import Decoded
from kinesis_batch.decoding.formats.json_pages import read_page
from kinesis_batch.decoding.rejects import DECODE, SCHEMA, TYPE_CHANGED, Rejected
from kinesis_batch.decoding.types import describe, family, is_list, unify
from kinesis_batch.routing.routes import value_at

Convert = Callable[[object], object | None]
#: A table field's value as its column takes it (path and value in), or the Refusal of it.
Fit = Callable[[tuple[str, ...], object], object]
_UNREADABLE = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, ValueError)


def parse(decoder: msgspec.json.Decoder[Any], position: int, payload: bytes) -> Any:
    """The JSON value of the record at ``position``, or its rejection (a Rejected) as not JSON."""
    try:
        return decoder.decode(payload)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # msgspec raises the latter for bytes not UTF-8
        return Rejected(position, DECODE, "not JSON", str(exc))


def not_an_object(position: int, value: Any) -> Rejected:
    """The rejection of a record whose JSON holds ``value`` where an object belongs."""
    return Rejected(position, DECODE, "not a JSON object", f"the record holds a {type(value).__name__}")


class JsonDecoder:
    """Decodes pages of JSON records; ``known``: the table's fields (the reference a record's
    types are checked against when a page's records disagree); ``whole_pages``: read a page in
    one call where it can (False: record by record always, which the tests compare it with)."""

    def __init__(self, known: pa.Schema | None = None, *, whole_pages: bool = True) -> None:
        self._decoder = msgspec.json.Decoder()
        self._whole_pages = whole_pages
        self.learn(known or pa.schema([]))

    def learn(self, table: pa.Schema) -> None:
        """The table's fields as they are now (they grow as the run adds columns)."""
        self._known = _as_json(pa.struct(list(table))) or pa.struct([])
        self._times = list(_time_paths(pa.struct(list(table)), ()))
        times = [(path, _as_time(convert)) for path, convert in self._times]
        self._known_paths = [*times, *_number_paths(self._known, ())]

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        whole = read_page(payloads, self._known, self._times) if self._whole_pages else None
        if whole is not None:
            return Decoded(whole, list(range(len(payloads))), [])
        rows: list[Any] = []
        positions: list[int] = []
        rejects: list[Rejected] = []
        for position, payload in enumerate(payloads):
            value = parse(self._decoder, position, payload)
            if isinstance(value, Rejected):
                rejects.append(value)
                continue
            objects = value if isinstance(value, list) else [value]
            if not all(isinstance(item, dict) for item in objects):
                rejects.append(not_an_object(position, next(item for item in objects if not isinstance(item, dict))))
                continue
            rows.extend(objects)
            positions.extend([position] * len(objects))
        return self.values(rows, positions, rejects)

    def written_routes(self, payloads: Sequence[bytes], path: tuple[str, ...]) -> list[list[Any] | None]:
        found: list[list[Any] | None] = []
        for position, payload in enumerate(payloads):
            value = parse(self._decoder, position, payload)
            objects = value if isinstance(value, list) else [value]
            readable = not isinstance(value, Rejected) and all(isinstance(item, dict) for item in objects)
            found.append([value_at(item, path) for item in objects] if readable else None)
        return found

    def values(self, rows: list[Any], positions: list[int], rejects: list[Rejected]) -> Decoded:
        """Decoded objects (``rows``, from the records at ``positions``) as one struct array, their
        time and number fields converted where the table has them; a record whose values cannot
        join the others is rejected whole."""
        wrong = {positions[i]: problem for i, row in enumerate(rows) if (problem := self._convert_known(row))}
        if wrong:
            rejects.extend(Rejected(position, SCHEMA, *problem) for position, problem in wrong.items())
            kept = [i for i, position in enumerate(positions) if position not in wrong]
            rows, positions = [rows[i] for i in kept], [positions[i] for i in kept]
            rejects.sort(key=lambda r: r.position)
        try:
            values = pa.array(rows, type=None) if rows else pa.array([], type=pa.struct([]))
        except _UNREADABLE:
            return self._one_by_one(rows, positions, rejects)
        if _booleans_as_numbers(rows, values.type):
            return self._one_by_one(rows, positions, rejects)
        return Decoded(values, positions, rejects)

    def _convert_known(self, row: dict[str, Any]) -> tuple[str, str] | None:
        """The table's time, date and number fields of ``row`` converted in place: times from ISO
        text or epoch numbers, whole numbers to an integer column's ints and numbers to a floating
        one's floats (so that the page's other records cannot retype a column the table has);
        the reason (kind, detail) if one cannot be."""
        for path, fit in self._known_paths:
            holder: Any = row
            for name in path[:-1]:
                holder = holder.get(name) if isinstance(holder, dict) else None
            if not isinstance(holder, dict) or holder.get(path[-1]) is None:
                continue
            value = holder[path[-1]]
            converted = fit(path, value)
            if isinstance(converted, Refusal):
                return converted.kind, converted.detail
            holder[path[-1]] = converted
        return None

    def _one_by_one(self, rows: list[Any], positions: list[int], rejects: list[Rejected]) -> Decoded:
        """The slow way: each row's types unified with the table's, the rows of the commonest
        types first (so one odd record early in a page does not decide a new field's type)."""
        kinds: dict[int, pa.DataType] = {}
        bad: set[int] = set()
        for index, row in enumerate(rows):
            try:
                kinds[index] = pa.array([row]).type
            except _UNREADABLE as exc:
                rejects.append(Rejected(positions[index], DECODE, "unreadable value", _unreadable(row, exc)))
                bad.add(positions[index])
        common = Counter(kinds.values())
        rows_of: dict[int, list[int]] = {}
        for index in sorted(kinds):
            rows_of.setdefault(positions[index], []).append(index)
        current: pa.DataType = self._known
        kept: list[int] = []
        # A record joins whole or not at all: a rejected record's rows type no column.
        by_commonest = sorted(rows_of.items(), key=lambda rows: (-max(common[kinds[i]] for i in rows[1]), rows[1][0]))
        for position, indexes in by_commonest:
            trial = current
            for index in indexes:
                merged = unify(trial, kinds[index])
                if merged is None:
                    if position not in bad:
                        rejects.append(Rejected(position, SCHEMA, TYPE_CHANGED, _conflict(trial, kinds[index], "")))
                    bad.add(position)
                    break
                trial = merged
            if position in bad:
                continue
            current = trial
            kept += indexes
        kept = sorted(index for index in kept if positions[index] not in bad)  # a record rejected: all its rows
        try:
            values = pa.array([rows[index] for index in kept], type=current)
        except _UNREADABLE:  # a value its column's type cannot hold exactly (2**53 + 1 among floats)
            for index in kept:
                try:
                    pa.array([rows[index]], type=current)
                except _UNREADABLE as exc:
                    rejects.append(Rejected(positions[index], DECODE, "unreadable value", _one_line(exc)))
                    bad.add(positions[index])
            kept = [index for index in kept if positions[index] not in bad]
            values = pa.array([rows[index] for index in kept], type=current)
        return Decoded(values, [positions[index] for index in kept], sorted(rejects, key=lambda r: r.position))


def _booleans_as_numbers(values: Sequence[Any], kind: pa.DataType) -> bool:
    """Whether Arrow's inference made numbers of some of ``values``' booleans: it types
    ``[false, 0.5]`` as doubles without a word (``[false, 1]`` it refuses)."""
    if pa.types.is_floating(kind):
        return any(isinstance(value, bool) for value in values)
    if pa.types.is_struct(kind):
        return any(
            _booleans_as_numbers([value.get(field.name) for value in values if isinstance(value, dict)], field.type)
            for field in (kind.field(i) for i in range(kind.num_fields))
            if _holds_floating(field.type)
        )
    if is_list(kind):
        items = [item for value in values if isinstance(value, list) for item in value]
        return _booleans_as_numbers(items, kind.value_type)
    return False


def _holds_floating(kind: pa.DataType) -> bool:
    if pa.types.is_floating(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_holds_floating(kind.field(i).type) for i in range(kind.num_fields))
    return bool(is_list(kind) and _holds_floating(kind.value_type))


def _time_paths(kind: pa.StructType, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Convert]]:
    """The time and date fields of a table's struct, by path through nested objects (those in
    lists are converted column-wise by the conform stage)."""
    for field in (kind.field(i) for i in range(kind.num_fields)):
        if pa.types.is_timestamp(field.type):
            yield (*path, field.name), timestamps.to_datetime
        elif pa.types.is_date(field.type):
            yield (*path, field.name), timestamps.to_date
        elif pa.types.is_struct(field.type):
            yield from _time_paths(field.type, (*path, field.name))


def _number_paths(kind: pa.StructType, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Fit]]:
    """The number fields of a table's JSON struct, by path through nested objects, and how a
    value is made the column's own (those in lists the conform stage fits column-wise)."""
    for field in (kind.field(i) for i in range(kind.num_fields)):
        if pa.types.is_integer(field.type):
            yield (*path, field.name), _whole
        elif pa.types.is_floating(field.type):
            yield (*path, field.name), _floating
        elif pa.types.is_struct(field.type):
            yield from _number_paths(field.type, (*path, field.name))


@dataclass(frozen=True)
class Refusal:
    """Why a table field's value cannot be its column's: a reason's kind and detail."""

    kind: str
    detail: str


def _as_time(convert: Convert) -> Fit:
    """A time or date field's Fit: ``convert``'s value, or refused."""

    def fit(path: tuple[str, ...], value: object) -> object:
        converted = convert(value)
        if converted is not None:
            return converted
        detail = f"{'.'.join(path)} is {value!r}, not an ISO 8601 time or date, nor epoch seconds or millis"
        return Refusal("not a time", detail)

    return fit


def _whole(path: tuple[str, ...], value: object) -> object:
    """A whole number for an integer column (an int as it is, a float without a fraction as an
    int; the conform stage checks its range); another float refused; anything else as it is."""
    if not isinstance(value, float):
        return value
    if value.is_integer() and -(2.0**63) <= value < 2.0**63:
        return int(value)
    detail = f"{'.'.join(path)} is {value!r}, not a whole number that fits int64; the table has an integer"
    return Refusal(TYPE_CHANGED, detail)


def _floating(path: tuple[str, ...], value: object) -> object:
    """An integer for a floating column as the nearest float (a JSON number is just a number)."""
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _as_json(kind: pa.DataType) -> pa.DataType | None:
    """The part of a table's type that JSON values (times converted) have as they are: the
    reference for them. Bytes, decimals and maps arrive as text, numbers or objects, which the
    conform stage converts, so they are left out (at every depth)."""
    if pa.types.is_struct(kind):
        fields = [
            pa.field(field.name, child)
            for field in (kind.field(i) for i in range(kind.num_fields))
            if (child := _as_json(field.type)) is not None
        ]
        return pa.struct(fields)
    if is_list(kind):
        item = _as_json(kind.value_type)
        return pa.list_(item) if item is not None else None
    if pa.types.is_decimal(kind) or pa.types.is_map(kind):
        return None
    return None if family(kind) == "binary" else kind


def _conflict(known: pa.DataType, seen: pa.DataType, path: str) -> str:
    """Which field of ``seen`` cannot join ``known``, as a reason says it."""
    if pa.types.is_struct(known) and pa.types.is_struct(seen):
        names = {known.field(i).name: known.field(i).type for i in range(known.num_fields)}
        for field in (seen.field(i) for i in range(seen.num_fields)):
            if field.name in names and unify(names[field.name], field.type) is None:
                return _conflict(names[field.name], field.type, f"{path}.{field.name}" if path else field.name)
    where = path or "the record"
    made = "as the table or this read's earlier records made it"
    return f"{where} is {describe(seen)}, but the column is {describe(known)} ({made})"


def _unreadable(row: Any, exc: BaseException) -> str:
    """Why a row cannot be read: the integer past int64 it holds (what no column type can hold
    exactly), else Arrow's own words."""
    found = _past_int64(row, "")
    return f"{found[0]} is {found[1]}, past int64" if found else _one_line(exc)


def _past_int64(value: Any, path: str) -> tuple[str, int] | None:
    """The first integer past int64 in ``value`` (at ``path``), and its path."""
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        return path or "the record", value
    if isinstance(value, dict):
        for name, item in value.items():
            if found := _past_int64(item, f"{path}.{name}" if path else name):
                return found
    elif isinstance(value, list):
        for item in value:
            if found := _past_int64(item, f"{path}[]"):
                return found
    return None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


__all__ = ["JsonDecoder"]
