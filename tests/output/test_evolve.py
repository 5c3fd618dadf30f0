"""A decoded table's schema as batches grow it: columns and nested fields added, columns widened
where the format allows it, anything else a conflict named in one line."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.output.evolve import additions, conflicts, merged, normalize

pytestmark = pytest.mark.contract("tables", why="each format's publish and read-back with these table libraries")

TABLE = pa.schema([("id", pa.int32()), ("user", pa.struct([("name", pa.string())]))])


@pytest.mark.parametrize(
    ("incoming", "widen", "grown"),
    [
        (pa.schema([("id", pa.int32())]), True, TABLE),  # nothing new
        (
            pa.schema([("id", pa.int32()), ("country", pa.string())]),
            True,
            TABLE.append(pa.field("country", pa.string())),
        ),
        (
            pa.schema([("user", pa.struct([("name", pa.string()), ("age", pa.int64())]))]),
            True,
            pa.schema([("id", pa.int32()), ("user", pa.struct([("name", pa.string()), ("age", pa.int64())]))]),
        ),
        (pa.schema([("id", pa.int64())]), True, pa.schema([("id", pa.int64()), TABLE.field("user")])),
        (pa.schema([("id", pa.int32())]), False, TABLE),
    ],
)
def test_a_batch_adds_columns_and_nested_fields_and_widens_where_it_may(
    incoming: pa.Schema, widen: bool, grown: pa.Schema
) -> None:
    assert merged(TABLE, [incoming], widen=widen, where="t") == grown


@pytest.mark.parametrize(
    ("incoming", "widen"),
    [
        (pa.schema([("id", pa.string())]), True),
        (pa.schema([("id", pa.int64())]), False),  # Delta: no widening
        (pa.schema([("user", pa.struct([("name", pa.int64())]))]), True),
    ],
)
def test_any_other_difference_is_a_conflict_naming_the_column(incoming: pa.Schema, widen: bool) -> None:
    with pytest.raises(InvalidStateError, match=r"column (id|user.name) is .* in the table and .* in this batch"):
        merged(TABLE, [incoming], widen=widen, where="t")


def test_the_formats_layouts_of_one_type_are_the_same_column() -> None:
    handed_back = pa.schema([("s", pa.large_string()), ("l", pa.large_list(pa.string_view()))])
    assert normalize(handed_back) == pa.schema([("s", pa.string()), ("l", pa.list_(pa.string()))])
    assert merged(handed_back, [pa.schema([("s", pa.string())])], widen=True, where="t") == normalize(handed_back)


def test_additions_are_the_new_or_changed_top_level_fields_and_conflicts_name_each() -> None:
    target = merged(TABLE, [pa.schema([("id", pa.int64()), ("c", pa.bool_())])], widen=True, where="t")
    assert [f.name for f in additions(TABLE, target)] == ["id", "c"]
    assert conflicts(TABLE, pa.schema([("id", pa.int64()), ("user", pa.string())])) == [
        "user is struct<name: string> in the table, string in the schema"
    ]
