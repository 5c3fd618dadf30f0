"""--partition-by: its forms, the partition of each row, and which layout a run writes with
(pure: tables of cases)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.columns import ARRIVAL, RAW
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError
from kinesis_batch.storage.layout import DEFAULT, EPOCH, FileLayout, PartitionBy, choose, spelled


@pytest.mark.parametrize(
    ("text", "transform", "source", "column", "column_type"),
    [
        ("day", "day", ARRIVAL.name, "arrival_day", pa.date32()),
        ("hour", "hour", ARRIVAL.name, "arrival_hour", pa.string()),
        ("day(event_time)", "day", "event_time", "event_time_day", pa.date32()),
        ("hour(event_time)", "hour", "event_time", "event_time_hour", pa.string()),
        ("identity(country)", "identity", "country", "country", pa.string()),
        (" day ", "day", ARRIVAL.name, "arrival_day", pa.date32()),
    ],
)
def test_each_form_of_partition_by_names_a_transform_a_source_and_a_column(
    text: str, transform: str, source: str, column: str, column_type: pa.DataType
) -> None:
    partition = PartitionBy.parse(text)
    assert partition is not None
    assert (partition.transform, partition.source, partition.column) == (transform, source, column)
    if transform != "identity":
        assert partition.column_type == column_type
    assert PartitionBy.parse(spelled(partition)) == partition  # the spelling round-trips


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("week", "use day, hour"),
        ("day()", "use day, hour"),
        ("month(ts)", "use day, hour"),
        ("identity(approximate_arrival_timestamp)", "one partition per record"),
        ("day(1st)", "use day, hour"),
    ],
)
def test_a_partition_by_that_is_none_of_the_forms_is_one_line_naming_them(text: str, says: str) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        PartitionBy.parse(text)


def test_none_is_no_partitions() -> None:
    assert PartitionBy.parse("none") is None and spelled(None) == "none"


NEW_YORK = timezone(timedelta(hours=-5))


@pytest.mark.parametrize(
    ("form", "values", "kind", "expected"),
    [
        ("day", [datetime(2026, 11, 25, 23, 59, tzinfo=UTC)], ARRIVAL.type, ["2026-11-25"]),
        # the UTC day and hour, whatever the column's zone
        ("day(t)", [datetime(2026, 11, 25, 23, 0, tzinfo=NEW_YORK)], pa.timestamp("us", "America/New_York"),
         ["2026-11-26"]),
        ("hour(t)", [datetime(2026, 11, 25, 23, 59, tzinfo=NEW_YORK)], pa.timestamp("us", "America/New_York"),
         ["2026-11-26-04"]),
        ("hour(t)", [datetime(2026, 11, 25, 7, 5)], pa.timestamp("ms"), ["2026-11-25-07"]),  # naive: UTC
        ("day(t)", [date(2026, 11, 25), None], pa.date32(), ["2026-11-25", None]),
        ("identity(t)", ["DE", None], pa.string(), ["DE", None]),
        ("identity(t)", [7, -1], pa.int64(), ["7", "-1"]),
        ("identity(t)", [True, False], pa.bool_(), ["true", "false"]),
    ],
)  # fmt: skip
def test_each_rows_partition_value_is_text_that_sorts_by_time(
    form: str, values: list[object], kind: pa.DataType, expected: list[str | None]
) -> None:
    partition = PartitionBy.parse(form)
    assert partition is not None
    rows = pa.record_batch({partition.source: pa.array(values, kind)})
    assert partition.values(rows).to_pylist() == expected


def test_split_keeps_each_partitions_rows_in_their_order() -> None:
    partition = PartitionBy.parse("identity(k)")
    assert partition is not None
    rows = pa.record_batch({"k": ["a", "b", None, "a", "b"], "n": [1, 2, 3, 4, 5]})
    parts = {value: part.column("n").to_pylist() for value, part in partition.split(rows)}
    assert parts == {"a": [1, 4], "b": [2, 5], None: [3]}
    one = pa.record_batch({"k": ["a", "a"], "n": [1, 2]})
    assert [(value, part is one) for value, part in partition.split(one)] == [("a", True)]  # no copy


UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


@given(
    form=st.sampled_from(["day(t)", "hour(t)"]),
    unit=st.sampled_from(sorted(UNITS)),
    zone=st.sampled_from([None, "UTC", "America/New_York"]),
    start=st.integers(-3 * 86_400, 3 * 86_400),  # either side of the epoch: floor, not truncation
    offsets=st.lists(st.integers(0, 2 * 3_600), min_size=1, max_size=12),
    null=st.booleans(),
)
def test_rows_split_by_time_as_their_utc_day_or_hour_says_in_one_part_or_many(
    form: str, unit: str, zone: str | None, start: int, offsets: list[int], null: bool
) -> None:
    partition = PartitionBy.parse(form)
    assert partition is not None
    seconds = [start + offset for offset in offsets]
    kind = pa.timestamp(unit, zone)
    rows = pa.record_batch(
        {"t": pa.array([s * UNITS[unit] for s in seconds] + ([None] if null else []), pa.int64()).cast(kind),
         "n": list(range(len(seconds) + null))}
    )  # fmt: skip
    # The oracle: each instant's UTC day or hour by datetime, grouped in first-seen order.
    spelling = "%Y-%m-%d" if form.startswith("day") else "%Y-%m-%d-%H"
    expected: dict[str | None, list[int]] = {}
    for n, second in enumerate(seconds):
        expected.setdefault((EPOCH + timedelta(seconds=second)).strftime(spelling), []).append(n)
    if null:
        expected[None] = [len(seconds)]
    parts = partition.split(rows)
    assert {value: part.column("n").to_pylist() for value, part in parts} == expected
    assert len(parts) == len(expected)
    if len(expected) == 1:
        assert parts[0][1] is rows  # one part: the rows themselves


@pytest.mark.parametrize(
    ("form", "value", "folder"),
    [
        ("day", "2026-11-25", "arrival_day=2026-11-25"),
        ("identity(path)", "a/b c", "path=a%2Fb%20c"),  # escaped as hive readers unescape it
        ("identity(path)", None, "path=__HIVE_DEFAULT_PARTITION__"),
    ],
)
def test_a_partitions_hive_folder(form: str, value: str | None, folder: str) -> None:
    partition = PartitionBy.parse(form)
    assert partition is not None and partition.folder(value) == folder


@pytest.mark.parametrize(
    ("requested", "existing", "new", "chosen"),
    [
        (None, None, True, DEFAULT),  # a new table: day of arrival
        ("none", None, True, None),
        ("hour", None, True, PartitionBy("hour", ARRIVAL.name)),
        (None, None, False, None),  # an existing unpartitioned table stays so
        (None, PartitionBy("hour", "t"), False, PartitionBy("hour", "t")),  # and a partitioned one keeps its own
        ("hour(t)", PartitionBy("hour", "t"), False, PartitionBy("hour", "t")),  # asking for it is fine
    ],
)
def test_a_run_writes_what_was_asked_else_the_tables_own_else_the_default(
    requested: str | None, existing: PartitionBy | None, new: bool, chosen: PartitionBy | None
) -> None:
    assert choose(requested, existing, new=new, where="t") == chosen


@pytest.mark.parametrize(
    ("requested", "existing", "says"),
    [
        ("day", None, "--partition-by day: t is partitioned by none; a table keeps its layout"),
        ("none", DEFAULT, "--partition-by none: t is partitioned by day; a table keeps its layout"),
        ("hour(t)", PartitionBy("day", "t"), "--partition-by hour\\(t\\): t is partitioned by day\\(t\\)"),
    ],
)
def test_asking_an_existing_table_for_another_layout_is_one_line(
    requested: str, existing: PartitionBy | None, says: str
) -> None:
    with pytest.raises(InvalidStateError, match=says):
        choose(requested, existing, new=False, where="t")


@pytest.mark.parametrize(
    ("form", "schema", "says"),
    [
        ("day(t)", pa.schema([("x", pa.int64())]), "has no field t \\(declare it with --schema"),
        ("day(t)", pa.schema([("t", pa.string())]), "t is string; day takes a timestamp"),
        ("hour(t)", pa.schema([("t", pa.date32())]), "t is date32\\[day\\]; hour takes a timestamp"),
        ("identity(t)", pa.schema([("t", pa.float64())]), "identity takes a string, integer or boolean"),
    ],
)
def test_a_source_the_rows_lack_or_cannot_partition_by_is_one_line(form: str, schema: pa.Schema, says: str) -> None:
    partition = PartitionBy.parse(form)
    assert partition is not None
    with pytest.raises(IllegalArgumentError, match=says):
        partition.check_source(schema, "the table")


def test_raw_rows_partition_by_arrival() -> None:
    DEFAULT.check_source(RAW.schema(batch_column=True), "the table")  # raises nothing


@pytest.mark.parametrize(
    "layout",
    [FileLayout(), FileLayout(DEFAULT, True, 1024), FileLayout(PartitionBy("identity", "k"), False, 5 << 20)],
)
def test_a_file_layout_travels_to_the_tasks_as_json(layout: FileLayout) -> None:
    assert FileLayout.from_json(layout.to_json()) == layout
