"""Fitting a column of scalars (numbers, text, times) to the table's type, value by value where
it matters: integers that overflow, numbers with a fraction for an integer column, text that is
not a time. Which rows do not fit is a mask, with one reason; the caller rejects those rows.

Widening (int32 to int64, float32 to float64) happens only where the format allows it
(``Policy.widen``), and for float32 only when the source's type is exact (Avro, Protobuf): a
JSON number is just a number, so it takes the column's float32 as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kinesis_batch.decoding import timestamps
from kinesis_batch.decoding.rejects import TYPE_CHANGED
from kinesis_batch.decoding.types import describe, family


@dataclass(frozen=True)
class Policy:
    """``add_columns``: a new field becomes a new column (else its records are dead letters).
    ``widen``: the format widens int32 to int64 and float32 to float64. ``exact``: the source's
    types are its own (Avro, Protobuf), not inferred from text (JSON)."""

    add_columns: bool = True
    widen: bool = True
    exact: bool = False


@dataclass(frozen=True)
class Conflict:
    """Rows (``mask`` over the column) that cannot be stored, and why."""

    mask: pa.Array
    kind: str
    detail: str


@dataclass(frozen=True)
class Fitted:
    """A column fitted: its ``array`` (None: nothing to store yet), the column's ``kind`` from
    now on (the table's, widened, or new), and the rows that did not fit."""

    array: pa.Array | None
    kind: pa.DataType | None
    conflicts: tuple[Conflict, ...] = ()


def fit_scalar(array: pa.Array, want: pa.DataType, policy: Policy, path: str) -> Fitted:
    have = array.type
    if pa.types.is_integer(want):
        return _integers(array, want, policy, path)
    if pa.types.is_floating(want) and (pa.types.is_integer(have) or pa.types.is_floating(have)):
        if have.bit_width > want.bit_width and pa.types.is_floating(have) and policy.exact:
            return _widened(array, want, policy, path)
        return Fitted(array.cast(want, safe=False), want)
    if pa.types.is_timestamp(want):
        return _times(array, want, path)
    if pa.types.is_date(want):
        return _dates(array, want, path)
    if pa.types.is_decimal(want) and (pa.types.is_integer(have) or pa.types.is_decimal(have)):
        try:
            return Fitted(array.cast(want), want)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return _all_rows(array, want, "out of range", f"{path} does not fit {want}")
    if family(want) != "other" and family(want) == family(have):
        return Fitted(array.cast(want), want)
    return changed(array, want, path)


def changed(array: pa.Array, want: pa.DataType, path: str) -> Fitted:
    """Every row with a value: the field's type changed."""
    detail = f"{path} is {describe(array.type)}; the table has {describe(want)}"
    return _all_rows(array, want, TYPE_CHANGED, detail)


def _integers(array: pa.Array, want: pa.DataType, policy: Policy, path: str) -> Fitted:
    have = array.type
    if not (pa.types.is_integer(have) or pa.types.is_floating(have)):
        return changed(array, want, path)
    conflicts: list[Conflict] = []
    if pa.types.is_floating(have):
        fraction = pc.fill_null(pc.not_equal(array, pc.floor(array)), False)
        if pc.any(fraction).as_py():
            conflicts.append(Conflict(fraction, TYPE_CHANGED, f"{path} has a fraction; the table has {want}"))
            array = pc.if_else(fraction, pa.scalar(None, have), array)
    outside = _outside(array, want)
    if pc.any(outside).as_py():
        if policy.widen and want.bit_width < 64 and pa.types.is_signed_integer(want):
            return _with(Fitted(*_fits_int64(array, path)), conflicts)
        conflicts.append(Conflict(outside, "out of range", f"{path} does not fit {want}"))
        array = pc.if_else(outside, pa.scalar(None, have), array)
    return Fitted(array.cast(want, safe=False), want, tuple(conflicts))


def _fits_int64(array: pa.Array, path: str) -> tuple[pa.Array, pa.DataType, tuple[Conflict, ...]]:
    outside = _outside(array, pa.int64())
    conflicts = (Conflict(outside, "out of range", f"{path} does not fit int64"),) if pc.any(outside).as_py() else ()
    kept = pc.if_else(outside, pa.scalar(None, array.type), array) if conflicts else array
    return kept.cast(pa.int64(), safe=False), pa.int64(), conflicts


def _with(fitted: Fitted, earlier: list[Conflict]) -> Fitted:
    return Fitted(fitted.array, fitted.kind, (*earlier, *fitted.conflicts))


def _widened(array: pa.Array, want: pa.DataType, policy: Policy, path: str) -> Fitted:
    if policy.widen:
        return Fitted(array, array.type)
    return changed(array, want, path)


def _times(array: pa.Array, want: pa.DataType, path: str) -> Fitted:
    have = array.type
    if pa.types.is_timestamp(have):
        return Fitted(array.cast(want), want)
    if pa.types.is_integer(have) or pa.types.is_floating(have):
        moments, bad = timestamps.from_epoch(array)
        detail = f"{path} holds a number that is no time (before year 1 or after 9999)"
        return _parsed(moments.cast(want), want, bad, detail)
    if family(have) == "string":
        parsed, bad = timestamps.parse_text(array.cast(pa.string()))
        return _parsed(parsed.cast(want), want, bad, f"{path} holds text that is not an ISO 8601 time")
    if pa.types.is_date(have):
        return Fitted(array.cast(pa.timestamp("s")).cast(want), want)
    return changed(array, want, path)


def _dates(array: pa.Array, want: pa.DataType, path: str) -> Fitted:
    have = array.type
    if pa.types.is_date(have):
        return Fitted(array.cast(want), want)
    if pa.types.is_timestamp(have):
        return Fitted(array.cast(want), want)
    if family(have) == "string":
        parsed, bad = timestamps.parse_dates(array.cast(pa.string()))
        return _parsed(parsed.cast(want), want, bad, f"{path} holds text that is not an ISO 8601 date")
    return changed(array, want, path)


def _parsed(array: pa.Array, want: pa.DataType, bad: pa.Array, detail: str) -> Fitted:
    conflicts = (Conflict(bad, "not a time", detail),) if pc.any(bad).as_py() else ()
    return Fitted(array, want, conflicts)


def _all_rows(array: pa.Array, want: pa.DataType, kind: str, detail: str) -> Fitted:
    present = array.is_valid()
    conflicts = (Conflict(present, kind, detail),) if pc.any(present).as_py() else ()
    return Fitted(pa.nulls(len(array), want), want, conflicts)


def _outside(array: pa.Array, kind: pa.DataType) -> pa.Array:
    """Which values do not fit the integer type ``kind`` (compared as floats for float values)."""
    low, high = _bounds(kind)
    if pa.types.is_floating(array.type):
        values = array.cast(pa.float64())
        return pc.fill_null(pc.or_(pc.less(values, float(low)), pc.greater_equal(values, float(high) + 1)), False)
    return pc.fill_null(pc.or_(pc.less(array, low), pc.greater(array, high)), False)


def _bounds(kind: pa.DataType) -> tuple[int, int]:
    info = {8: 2**7, 16: 2**15, 32: 2**31, 64: 2**63}[kind.bit_width]
    if pa.types.is_unsigned_integer(kind):
        return 0, 2 * info - 1
    return -info, info - 1


__all__ = ["Conflict", "Fitted", "Policy", "changed", "fit_scalar"]
