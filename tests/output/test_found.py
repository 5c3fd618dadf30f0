"""What an output location holds, told from the names at its top, and which format may write
there: a table of cases (kinesis_batch.output.found is pure)."""

from __future__ import annotations

import pytest

from kinesis_batch.errors import ForeignOutputError
from kinesis_batch.output.found import FOREIGN, NOTHING, Listing, check_writable, what_is

DELTA, ICEBERG, PARQUET = "delta", "iceberg", "parquet"

CASES = [
    ("empty", Listing.of([], []), NOTHING),
    ("only our bookkeeping", Listing.of([], ["_kinesis_batch"]), NOTHING),
    ("a Delta table", Listing.of([], ["_delta_log", "data", "arrival_day=2026-11-25"]), DELTA),
    ("a Delta table with stray Parquet batches", Listing.of(["_partition_by"], ["_delta_log", "batch_id=b1"]), DELTA),
    ("an Iceberg table", Listing.of([], ["metadata", "data"], ["00001-a.metadata.json", "snap-1.avro"]), ICEBERG),
    ("a metadata folder of something else", Listing.of([], ["metadata"], ["notes.txt"]), FOREIGN),
    ("our Parquet batches", Listing.of(["_partition_by"], ["_staging", "batch_id=b1"]), PARQUET),
    ("our Parquet folder before its first batch", Listing.of([], ["_staging"]), PARQUET),
    ("our Parquet batches from before layouts", Listing.of([], ["batch_id=b1"]), PARQUET),
    ("somebody's files", Listing.of(["report.csv"], []), FOREIGN),
    ("somebody's folders", Listing.of([], ["2026", "_discarded"]), FOREIGN),
    ("a hidden file", Listing.of([".keep"], []), FOREIGN),
]


@pytest.mark.parametrize(("listing", "found"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_what_a_location_holds_is_told_by_the_names_at_its_top(listing: Listing, found: str) -> None:
    assert what_is(listing) == found


WRITABLE = {
    "parquet": {NOTHING, PARQUET},
    "delta": {NOTHING, DELTA},
    "iceberg": {NOTHING, ICEBERG},
}
LISTINGS = {found: listing for _, listing, found in CASES}


@pytest.mark.parametrize("format", sorted(WRITABLE))
@pytest.mark.parametrize("found", [NOTHING, DELTA, ICEBERG, PARQUET, FOREIGN])
def test_a_format_writes_only_where_there_is_nothing_or_its_own_kind_of_table(format: str, found: str) -> None:
    if found in WRITABLE[format]:
        check_writable(format, LISTINGS[found], "--output /x")
        return
    with pytest.raises(ForeignOutputError) as refused:
        check_writable(format, LISTINGS[found], "--output /x")
    line = str(refused.value)
    assert "\n" not in line and line.startswith("--output /x holds "), line
    assert ("none of kinesis-batch's" in line) == (found == FOREIGN)
    if found != FOREIGN:
        assert f"--format {found}" in line


def test_a_foreign_folder_is_named_by_a_few_of_its_names() -> None:
    with pytest.raises(ForeignOutputError, match=r"\(a, b, c, \.\.\.\)"):
        check_writable("parquet", Listing.of(["a", "b", "c", "d"], []), "--output /x")
