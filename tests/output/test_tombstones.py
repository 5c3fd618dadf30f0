"""A table of current state's tombstones: read by key, expired by the delete's arrival time,
compacted into one file, and read whole while an expiry compacts beside the read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from kinesis_batch.columns import (
    ARRIVAL,
    CHANGE_POSITION,
    LINEAGE_DEPTH,
    SEQUENCE_NUMBER,
    SHARD_ID,
    SUB_SEQUENCE_NUMBER,
)
from kinesis_batch.output.tombstones import READERS, Tombstones
from kinesis_batch.storage.place import Place

pytestmark = pytest.mark.contract("tables", why="each format's publish and read-back with these table libraries")

NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)


def deletes(keys: list[str], *, hours_ago: float, sequence: int = 1) -> pa.Table:
    count = len(keys)
    return pa.table(
        {
            "pk": keys,
            SHARD_ID.name: ["shardId-000000000000"] * count,
            SEQUENCE_NUMBER.name: [str(sequence + i) for i in range(count)],
            SUB_SEQUENCE_NUMBER.name: pa.array([0] * count, SUB_SEQUENCE_NUMBER.type),
            LINEAGE_DEPTH.name: pa.array([0] * count, LINEAGE_DEPTH.type),
            ARRIVAL.name: pa.array([NOW - timedelta(hours=hours_ago)] * count, ARRIVAL.type),
            CHANGE_POSITION.name: pa.array([[sequence]] * count, CHANGE_POSITION.type),
            "version": [9] * count,  # an image column: not kept
        }
    )


@pytest.fixture
def tombstones(tmp_path: Path) -> Tombstones:
    return Tombstones(Place(str(tmp_path / "_kinesis_batch")))


def keys_of(found: pa.Table | None) -> list[str]:
    return sorted(found.column("pk").to_pylist()) if found is not None else []


def test_tombstones_answer_for_the_keys_asked_and_keep_only_the_key_and_the_order(tombstones: Tombstones) -> None:
    assert tombstones.read(["pk"]) is None
    tombstones.write("b1", deletes(["a", "b"], hours_ago=1), ["pk"])
    tombstones.write("b2", deletes(["c"], hours_ago=1), ["pk"])
    tombstones.write("b3", deletes([], hours_ago=1), ["pk"])  # nothing deleted: no file

    found = tombstones.read(["pk"], pa.table({"pk": ["a", "c", "z"]}))
    assert keys_of(found) == ["a", "c"]
    assert found is not None and "version" not in found.schema.names
    assert len(tombstones._files()) == 2


def test_expiry_drops_the_old_keeps_the_newest_per_key_in_one_file(tombstones: Tombstones) -> None:
    tombstones.write("old", deletes(["a", "b"], hours_ago=200), ["pk"])
    tombstones.write("young", deletes(["b", "c"], hours_ago=2, sequence=50), ["pk"])
    tombstones.write("younger", deletes(["c"], hours_ago=1, sequence=90), ["pk"])

    assert tombstones.expire(168, NOW) == (2, 2)  # b and c kept (c once: its newest), a and old b gone

    found = tombstones.read(["pk"])
    assert found is not None
    assert dict(zip(found.column("pk").to_pylist(), found.column(CHANGE_POSITION.name).to_pylist(), strict=True)) == {
        "b": [50],
        "c": [90],
    }
    assert len(tombstones._files()) == 1
    assert tombstones.expire(168, NOW + timedelta(hours=300)) == (0, 2)
    assert tombstones.read(["pk"]) is None


def test_a_read_beside_an_expiry_sees_every_fact(
    tombstones: Tombstones, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tombstones.write("b1", deletes(["a"], hours_ago=1), ["pk"])
    tombstones.write("b2", deletes(["b"], hours_ago=1), ["pk"])
    listed = tombstones._files()
    calls = []

    def stale_first() -> list[str]:  # the read lists, then an expiry compacts and deletes those files
        calls.append(1)
        if len(calls) == 1:
            Tombstones(Place(str(tmp_path / "_kinesis_batch"))).expire(168, NOW)
            return listed
        return Tombstones._files(tombstones)

    monkeypatch.setattr(tombstones, "_files", stale_first)
    assert keys_of(tombstones.read(["pk"])) == ["a", "b"]
    assert len(calls) == 3  # listed, a file gone (listed to see), listed again


def test_a_read_sees_every_batchs_file_when_there_are_more_than_it_reads_at_once(tombstones: Tombstones) -> None:
    count = READERS * 2 + 3
    for number in range(count):
        tombstones.write(f"b{number}", deletes([f"k{number}"], hours_ago=1, sequence=number), ["pk"])

    found = tombstones.read(["pk"], pa.table({"pk": [f"k{number}" for number in range(count)] + ["none"]}))
    assert keys_of(found) == sorted(f"k{number}" for number in range(count))
    assert found is not None and sorted(found.column(CHANGE_POSITION.name).to_pylist()) == [[n] for n in range(count)]


def test_a_key_of_two_columns_is_answered_beside_the_list_column_of_the_order(tombstones: Tombstones) -> None:
    two = deletes(["a", "a", "b"], hours_ago=1).append_column("sk", pa.array([1, 2, 1]))
    tombstones.write("b1", two, ["pk", "sk"])

    found = tombstones.read(["pk", "sk"], pa.table({"pk": ["a", "b", "b"], "sk": [2, 2, 1]}))

    assert found is not None
    assert sorted(zip(found.column("pk").to_pylist(), found.column("sk").to_pylist(), strict=True)) == [
        ("a", 2),
        ("b", 1),
    ]
