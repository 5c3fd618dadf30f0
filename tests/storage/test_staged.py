"""What a read step leaves per shard range: written as JSON and read back whole (files of rows,
of dead letters, of held records, each with its route), a staging of the version before
decoding still read, and the batch's files listed by name from whatever results are there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.shards.reader import ReadResult
from kinesis_batch.storage.place import Place
from kinesis_batch.storage.staged import (
    RangeResult,
    StagedFile,
    files_of,
    read_results,
    staged,
    staged_dead_letters,
    staged_files,
)

NAMES = st.from_regex(r"(day=2026-11-2[0-9]/)?part-[0-9a-f]{8}\.parquet", fullmatch=True)
FILES = st.builds(
    StagedFile,
    name=NAMES,
    rows=st.integers(0, 10**6),
    schema=st.none() | st.just("c2NoZW1h"),
    partition=st.none() | st.just("2026-11-25") | st.just(""),
    stats=st.none() | st.just('{"min": 1}'),
    route=st.none() | st.sampled_from(["orders", "items"]),
)
READS = st.builds(
    ReadResult,
    shard_id=st.just("shardId-000000000001"),
    last_sequence_number=st.none() | st.integers(0, 10**56).map(str),
    last_sub_sequence_number=st.none() | st.integers(0, 9),
    records=st.integers(0, 10**6),
    bytes=st.integers(0, 10**9),
    reached_shard_end=st.booleans(),
    millis_behind_latest=st.none() | st.integers(0, 10**8),
    get_records_calls=st.integers(0, 10**4),
    throttled_calls=st.integers(0, 99),
    iterator_renewals=st.integers(0, 9),
)


def unique(files: list[StagedFile]) -> tuple[StagedFile, ...]:
    return tuple(sorted({file.name: file for file in files}.values(), key=lambda file: file.name))


@given(
    read=READS,
    files=st.lists(FILES, max_size=4).map(unique),
    dead=st.lists(FILES, max_size=3).map(unique),
    held=st.lists(FILES, max_size=2).map(unique),
    rows=st.integers(0, 99),
)
def test_a_ranges_result_reads_back_as_it_was_written(
    read: ReadResult,
    files: tuple[StagedFile, ...],
    dead: tuple[StagedFile, ...],
    held: tuple[StagedFile, ...],
    rows: int,
) -> None:
    result = RangeResult(read, files, dead, {"rows": rows, "tables": {"orders": rows}}, held)
    assert RangeResult.from_json(result.to_json()) == result


def test_a_staging_of_the_version_before_decoding_still_reads() -> None:
    read = ReadResult("shardId-0", "77", 0, 5, 50, False, 0, 1, 0, 0)
    body = {
        k: v
        for k, v in json.loads(RangeResult(read).to_json()).items()
        if k not in ("files", "dead_letter_files", "counts")
    }
    legacy = RangeResult.from_json(json.dumps(body | {"file": "part-0.parquet"}))
    assert legacy.read == read and legacy.files == (StagedFile("part-0.parquet", 5),) and legacy.counts == {}


def test_the_batchs_files_are_what_its_results_name(tmp_path: Path) -> None:
    results = Place(str(tmp_path))
    read = ReadResult("shardId-1", "9", 0, 3, 30, False, 0, 1, 0, 0)
    one = RangeResult(read, (StagedFile("part-b", 2), StagedFile("part-a", 1)), (StagedFile("part-x", 1),))
    two = RangeResult(read, (StagedFile("part-c", 4),))
    results.write_text("shardId-1.json", one.to_json())
    results.write_text("shardId-2.json", two.to_json())
    results.write_text(".shardId-3.json", one.to_json())  # a write in progress is no result yet
    assert set(staged(results)) == {"shardId-1", "shardId-2"}
    assert [f.name for f in staged_files(results)] == ["part-a", "part-b", "part-c"]
    assert [f.name for f in staged_dead_letters(results)] == ["part-x"]
    assert files_of(staged(results)) == staged_files(results)
    assert read_results(results) == {"shardId-1": read, "shardId-2": read}


def test_a_result_gone_while_it_was_read_is_a_changed_staging(tmp_path: Path) -> None:
    class Vanishing(Place):
        def read_text(self, name: str) -> str | None:
            return None  # listed, then removed by a publish or a discard before it was read

    place = Vanishing(str(tmp_path))
    Place(str(tmp_path)).write_text("shardId-1.json", "{}")
    with pytest.raises(InvalidStateError, match=r"changed while it was read: shardId-1\.json is gone"):
        staged(place)
