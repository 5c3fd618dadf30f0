"""One range's pipeline: every record ends as rows, one dead letter, or filtered out, and the
counts add up; the table's fields grow page by page; ``--on-bad-record fail`` stops at the
first record that would be a dead letter, naming it."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest

from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.decoding.pipeline import Pipeline
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.errors import BadRecordError
from kinesis_batch.routing.routes import SINGLE
from kinesis_batch.shards.model import Record


def records(*payloads: bytes) -> list[Record]:
    at = datetime(2026, 11, 25, tzinfo=UTC)
    return [Record("shardId-7", str(5000 + i), i % 2, f"k{i}", p, at) for i, p in enumerate(payloads)]


def pipeline(batch_id: str | None = "b1", **settings: str) -> Pipeline:
    spec = DecodeSpec(DecodeSettings(decode="json", **settings))  # type: ignore[arg-type]
    return Pipeline(spec, shard_id="shardId-7", depth=2, batch_id=batch_id)


def test_every_record_is_rows_a_dead_letter_or_filtered_and_the_counts_add_up() -> None:
    run = pipeline(transform="tests.decoding.transforms:drop_odd")
    done = run.page(records(b'{"id": 2}', b'{"id": 3}', b"nope", gzip.compress(b'[{"id": 4}, {"id": 6}]'), b"[]"))
    assert done.rows is not None and done.dead is not None
    assert done.rows.column("id").to_pylist() == [2, 4, 6]
    assert done.rows.column("record_index").to_pylist() == [0, 0, 1]
    assert set(done.rows.column("lineage_depth").to_pylist()) == {2} and set(
        done.rows.column("batch_id").to_pylist()
    ) == {"b1"}
    (dead,) = done.dead.to_pylist()
    assert (dead["sequence_number"], dead["data"], dead["stage"]) == ("5002", b"nope", "decode")
    assert dead["reason"].startswith("not JSON: ") and dead["sub_sequence_number"] == 0
    counts = run.counts
    assert (counts.records, counts.rows, counts.dead_letters, counts.filtered) == (5, 3, 1, 2)
    assert counts.records == 2 + counts.dead_letters + counts.filtered  # records of rows: 5000 and 5003


def test_the_fields_grow_page_by_page_and_a_rejected_records_field_adds_no_column() -> None:
    run = pipeline()
    first = run.page(records(b'{"id": 1}'))
    second = run.page(records(b'{"id": 2, "country": "FR"}', b'{"id": "x", "unseen": 1}'))
    assert first.rows is not None and second.rows is not None
    assert [f.name for f in run.fields_of(SINGLE)] == ["id", "country"]
    assert second.rows.schema.names[-3:] == ["id", "country", "batch_id"]
    assert second.dead is not None and second.dead.column("reason").to_pylist() == [
        "type changed: id is string, but the column is int64 (as the table or this read's earlier records made it)"
    ]


def test_a_field_with_a_name_of_ours_is_a_dead_letter() -> None:
    done = pipeline().page(records(b'{"id": 1, "sequence_number": 9}', b'{"id": 2}'))
    assert done.rows is not None and done.rows.column("id").to_pylist() == [2]
    assert done.dead is not None and done.dead.column("reason").to_pylist()[0].startswith(
        "reserved name: field sequence_number"
    )


def test_with_on_bad_record_fail_the_first_bad_record_stops_the_run_naming_it() -> None:
    with pytest.raises(
        BadRecordError, match=r"shard shardId-7, sequence number 5001 \(sub-sequence 1\): decode failed: not JSON"
    ):
        pipeline(on_bad_record="fail").page(records(b'{"id": 1}', b"{oops"))


def test_raw_metadata_and_the_table_fields_make_the_rows_schema() -> None:
    spec = DecodeSpec(DecodeSettings(decode="json"), table=pa.schema([("id", pa.int64()), ("note", pa.string())]))
    run = Pipeline(spec, shard_id="shardId-7", depth=0, batch_id=None)
    done = run.page(records(b'{"id": 1}'))
    assert done.rows is not None
    assert done.rows.schema.names == [
        "shard_id", "sequence_number", "sub_sequence_number", "record_index", "partition_key",
        "approximate_arrival_timestamp", "lineage_depth", "id", "note",
    ]  # fmt: skip


def test_dms_control_records_and_debezium_tombstones_are_counted_as_skipped_not_dead_letters() -> None:
    def dms(operation: str, kind: str = "data", at: str = "10:00:00.000001") -> bytes:
        metadata = {"timestamp": f"2026-11-25T{at}Z", "record-type": kind, "operation": operation}
        return json.dumps({"data": {"id": 7, "name": operation}, "metadata": metadata}).encode()

    def debezium(op: str | None, lsn: int = 1) -> bytes:
        if op is None:
            return b"null"  # the tombstone Debezium sends after a delete
        image = {"id": 7, "name": op}
        return json.dumps(
            {"before": None, "after": image, "op": op, "source": {"lsn": lsn, "connector": "postgresql"}}
        ).encode()

    cases = [
        (
            "dms",
            [dms("insert"), dms("create-table", "control"), dms("update", at="10:00:01"), dms("drop-table", "control")],
        ),
        ("debezium", [debezium("c"), debezium(None), debezium("u", lsn=2), debezium("t")]),
    ]
    for mode, payloads in cases:
        spec = DecodeSpec(DecodeSettings(decode="json"), changes=ChangeSettings.parse(mode, key="id"))
        run = Pipeline(spec, shard_id="shardId-7", depth=0, batch_id="b1")
        done = run.page(records(*payloads))
        counts = run.counts
        assert done.dead is None, done.dead.to_pylist() if done.dead is not None else None
        assert counts.changes["skipped"] == 2, (mode, counts.changes)
        assert (counts.records, counts.dead_letters, counts.filtered) == (4, 0, 0), (mode, counts)
        assert done.rows is not None and done.rows.column("name").to_pylist() == ["update" if mode == "dms" else "u"]


def test_a_change_keeps_its_own_envelope_when_a_record_before_it_does_not_decompress() -> None:
    def dms(operation: str, name: str, second: int) -> bytes:
        metadata = {"timestamp": f"2026-11-25T10:00:0{second}Z", "record-type": "data", "operation": operation}
        return json.dumps({"data": {"id": 7, "name": name}, "metadata": metadata}).encode()

    settings = DecodeSettings(decode="json", decompress="gzip")
    spec = DecodeSpec(settings, changes=ChangeSettings.parse("dms", key="id"))
    run = Pipeline(spec, shard_id="shardId-7", depth=0, batch_id="b1")
    payloads = [b"not gzip", gzip.compress(dms("delete", "old", 3)), gzip.compress(dms("insert", "new", 1))]
    done = run.page(records(*payloads))
    assert done.dead is not None and done.dead.column("stage").to_pylist() == ["decompress"]
    assert done.rows is not None  # the delete (second 3) is the key's newest, whatever record came before it
    assert done.rows.column("change_op").to_pylist() == ["delete"]
    assert done.rows.column("name").to_pylist() == ["old"]


@pytest.mark.parametrize("goods", [1, 3])
@pytest.mark.parametrize(
    ("refused", "why"),
    [
        (b'{"pk": "x", "ts": "soon"}', "--sequence-by ts orders nothing"),
        (b'{"pk": "x", "ts": null, "stray": 1}', "no ts"),
        (b'{"ts": "x", "pk": null}', "no key"),
    ],
)
def test_a_record_the_changes_stage_refuses_types_no_column_of_the_page(refused: bytes, why: str, goods: int) -> None:
    """The refused record comes first, so (against one good record) it would type ``pk`` or ``ts``
    for the page: the good records after it are rows of their own types, and it is the page's one
    dead letter, adding no column."""
    spec = DecodeSpec(DecodeSettings(decode="json"), changes=ChangeSettings.parse("upsert", key="pk", sequence_by="ts"))
    run = Pipeline(spec, shard_id="shardId-7", depth=0, batch_id="b1")
    good = [json.dumps({"pk": -10 - i, "ts": i, "version": i}).encode() for i in range(goods)]
    done = run.page(records(refused, *good))
    assert done.dead is not None and done.dead.column("sequence_number").to_pylist() == ["5000"], why
    assert done.rows is not None and sorted(done.rows.column("pk").to_pylist()) == [-10 - i for i in range(goods)][::-1]
    assert "stray" not in run.fields_of(SINGLE).names and run.fields_of(SINGLE).field("pk").type == pa.int64()
    counts = run.counts
    assert (counts.records, counts.rows, counts.dead_letters, counts.filtered) == (1 + goods, goods, 1, 0)


def test_a_refused_change_decoded_again_leaves_the_skipped_records_counted_once() -> None:
    def dms(operation: str, key: object, kind: str = "data") -> bytes:
        metadata = {"timestamp": "2026-11-25T10:00:00Z", "record-type": kind, "operation": operation}
        return json.dumps({"data": {"id": key}, "metadata": metadata}).encode()

    spec = DecodeSpec(DecodeSettings(decode="json"), changes=ChangeSettings.parse("dms", key="id"))
    run = Pipeline(spec, shard_id="shardId-7", depth=0, batch_id="b1")
    done = run.page(records(dms("insert", None), dms("create-table", 1, "control"), dms("insert", 7)))
    assert done.dead is not None and done.dead.column("stage").to_pylist() == ["changes"]
    assert done.rows is not None and done.rows.column("id").to_pylist() == [7]
    assert run.counts.changes["skipped"] == 1
    assert (run.counts.records, run.counts.dead_letters, run.counts.filtered) == (3, 1, 0)


def test_a_page_whose_refused_record_shaped_no_column_is_decoded_once() -> None:
    spec = DecodeSpec(DecodeSettings(decode="json"), changes=ChangeSettings.parse("upsert", key="pk", sequence_by="ts"))
    run = Pipeline(spec, shard_id="shardId-7", depth=0, batch_id="b1")
    run.page(records(b'{"pk": 1, "ts": 1}'))
    decoder, calls = run.decoder, []

    class Counted:
        def decode(self, payloads: Any) -> Any:
            calls.append(len(payloads))
            return decoder.decode(payloads)

        def learn(self, table: pa.Schema) -> None:
            decoder.learn(table)

    run.decoder = Counted()
    done = run.page(records(b'{"pk": 2, "ts": null}', b'{"pk": 3, "ts": 3}'))
    assert calls == [2], "the table's columns already typed the page: nothing to decode again"
    assert done.dead is not None and done.dead.column("stage").to_pylist() == ["changes"]
    run.page(records(b'{"pk": "x", "ts": null}', b'{"pk": 4, "ts": 4}', b'{"pk": 5, "ts": null, "new": 1}'))
    assert calls == [2, 3, 2], "a page a refused record typed (a new column) is decoded again without it"
    assert "new" not in run.fields_of(SINGLE).names
