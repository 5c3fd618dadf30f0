"""Arrow type arithmetic for decoded fields, drawn: unifying two types is what Arrow's own
inference makes of values of both (the independent oracle here), symmetric where both join."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.decoding.types import describe, family, is_empty, storable, unify

SCALARS = st.sampled_from([pa.int64(), pa.float64(), pa.string(), pa.bool_(), pa.null()])


def kinds(depth: int = 2) -> st.SearchStrategy[pa.DataType]:
    if depth == 0:
        return SCALARS
    inner = kinds(depth - 1)
    return st.one_of(
        SCALARS,
        inner.map(pa.list_),
        st.dictionaries(st.sampled_from("abc"), inner, max_size=3).map(lambda fields: pa.struct(list(fields.items()))),
    )


def sample(kind: pa.DataType) -> Any:
    """One value of ``kind`` that Arrow infers back as ``kind`` (None for null)."""
    if pa.types.is_struct(kind):
        return {kind.field(i).name: sample(kind.field(i).type) for i in range(kind.num_fields)}
    if pa.types.is_list(kind):
        item = sample(kind.value_type)
        return [] if item is None else [item]
    return {pa.int64(): 1, pa.float64(): 1.5, pa.string(): "s", pa.bool_(): True, pa.null(): None}[kind]


def _bool_beside_number(first: pa.DataType, second: pa.DataType) -> bool:
    """Somewhere in the two types, a boolean where the other has a number."""
    pair = {first, second}
    if pa.types.is_boolean(first) or pa.types.is_boolean(second):
        return any(pa.types.is_integer(k) or pa.types.is_floating(k) for k in pair)
    if all(pa.types.is_list(k) for k in pair):
        return _bool_beside_number(first.value_type, second.value_type)
    if all(pa.types.is_struct(k) for k in pair):
        theirs = {second.field(i).name: second.field(i).type for i in range(second.num_fields)}
        return any(
            _bool_beside_number(first.field(i).type, theirs[first.field(i).name])
            for i in range(first.num_fields)
            if first.field(i).name in theirs
        )
    return False


@given(kinds(), kinds())
def test_two_types_unify_as_arrow_infers_values_of_both(first: pa.DataType, second: pa.DataType) -> None:
    try:
        inferred = pa.array([sample(first), sample(second)]).type
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        inferred = None
    if _bool_beside_number(first, second):  # Arrow makes 1.0 of True: a column here does not
        inferred = None
    got = unify(first, second)
    assert got == inferred, f"{first} and {second}: unified {got}, Arrow infers {inferred}"
    assert (unify(second, first) is None) is (got is None), "they join either way round, or neither"


@pytest.mark.parametrize(
    ("kind", "empty", "kept"),
    [
        (pa.null(), True, None),
        (pa.list_(pa.null()), True, None),
        (pa.struct([]), True, None),
        (pa.struct([("a", pa.null()), ("b", pa.list_(pa.null()))]), True, None),
        (pa.struct([("a", pa.null()), ("b", pa.int64())]), False, pa.struct([("b", pa.int64())])),
        (pa.list_(pa.struct([("a", pa.null()), ("c", pa.string())])), False, pa.list_(pa.struct([("c", pa.string())]))),
        (pa.int64(), False, pa.int64()),
    ],
)
def test_what_is_not_yet_a_type_waits_and_storable_keeps_the_rest(kind: pa.DataType, empty: bool, kept: Any) -> None:
    assert is_empty(kind) is empty and storable(kind) == kept


@pytest.mark.parametrize(
    ("first", "second", "unified"),
    [
        (pa.int32(), pa.int64(), pa.int64()),
        (pa.int64(), pa.float32(), pa.float64()),
        (pa.timestamp("ms"), pa.timestamp("us", tz="UTC"), pa.timestamp("us", tz="UTC")),
        (pa.string(), pa.large_string(), pa.string()),
        (pa.list_(pa.null()), pa.string(), None),  # an empty list joins lists only
        (pa.struct([]), pa.int64(), None),  # an empty object joins objects only
        (pa.binary(), pa.string(), None),
    ],
)
def test_unify_by_hand(first: pa.DataType, second: pa.DataType, unified: pa.DataType | None) -> None:
    assert unify(first, second) == unified


def test_a_type_reads_in_a_reason_as_a_json_user_names_it() -> None:
    assert [describe(k) for k in (pa.struct([]), pa.list_(pa.large_string()), pa.map_(pa.string(), pa.int8()))] == [
        "object",
        "list of string",
        "map",
    ]
    assert describe(pa.timestamp("us", tz="UTC")) == "timestamp" and describe(pa.int64()) == "int64"
    assert family(pa.large_binary()) == "binary" and family(pa.int8()) == "other"
