"""The Glue Schema Registry (moto's Glue): its record format, and versions fetched once per
process; the decoders that read Avro, Protobuf and JSON records in that format."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from kinesis_batch.aws import glue_client
from kinesis_batch.decoding.decoders import decoder_for
from kinesis_batch.decoding.registry import Registry, split
from kinesis_batch.decoding.rejects import Rejected
from kinesis_batch.decoding.resolve import resolve
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.errors import DependencyError, IllegalArgumentError
from tests.decoding.support import avro_datum, framed, register, varint

V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "country", "type": ["null", "string"], "default": None}]}
VERSION = "5c8d1b7e-2f3a-4b6c-9d0e-1f2a3b4c5d6e"


pytestmark = pytest.mark.processes  # the Glue Schema Registry of moto's server


@pytest.mark.parametrize(
    ("payload", "found"),
    [
        (framed(VERSION, b"datum"), (VERSION, b"datum")),
        (framed(VERSION, b"datum", compress=True), (VERSION, b"datum")),
        (b"\x00" + uuid.UUID(VERSION).bytes + b"datum", "not in the schema registry's format"),
        (b"\x03\x00short", "not in the schema registry's format"),
        (bytes([3, 9]) + uuid.UUID(VERSION).bytes + b"datum", "unknown compression"),
        (bytes([3, 5]) + uuid.UUID(VERSION).bytes + b"not zlib", "corrupt zlib"),
    ],
)
def test_a_records_header_gives_its_schema_version_and_datum(payload: bytes, found: Any) -> None:
    result = split(payload)
    if isinstance(found, tuple):
        assert result == found
    else:
        assert isinstance(result, Rejected) and result.kind == found


def test_avro_records_of_two_versions_in_one_page_are_rows_of_both_versions_fields() -> None:
    glue = glue_client()
    first, second = register(glue, "reg", "orders", "AVRO", V1), register(glue, "reg", "orders", "AVRO", V2)
    spec = resolve(DecodeSettings(decode="avro", schema="glue://reg/orders"), glue=lambda: glue)
    assert spec.declared is not None and spec.declared.names == ["id", "country"]  # the newest version
    registry = Registry(glue_client, where=str(glue.meta.endpoint_url))
    decoder = decoder_for(spec, registry)
    payloads = [
        framed(first, avro_datum(V1, {"id": 1})),
        framed(second, avro_datum(V2, {"id": 2, "country": "FR"}), compress=True),
        framed(str(uuid.uuid4()), b"\x02"),  # a version the registry does not know
        b'{"id": 3}',  # not framed
    ]
    decoded = decoder.decode(payloads)
    assert sorted(decoded.values.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "country": None},
        {"id": 2, "country": "FR"},
    ]
    assert [(r.position, r.kind) for r in decoded.rejects] == [
        (2, "unknown schema version"),
        (3, "not in the schema registry's format"),
    ]


def test_protobuf_records_name_their_message_by_the_registrys_index() -> None:
    glue = glue_client()
    proto = (
        'syntax = "proto3";\npackage shop;\n'
        "message Ack { bool ok = 1; }\nmessage Order { string id = 1; int64 qty = 2; }\n"
    )
    version = register(glue, "reg", "porders", "PROTOBUF", proto)
    spec = resolve(DecodeSettings(decode="protobuf", schema="glue://reg/porders", message="Order"), glue=lambda: glue)
    decoder = decoder_for(spec, Registry(glue_client, where=str(glue.meta.endpoint_url)))
    from tests.decoding.support import message_class

    order = message_class(proto, "shop.Order")(id="o1", qty=5).SerializeToString()
    decoded = decoder.decode([framed(version, varint(1) + order), framed(version, varint(7) + order)])
    assert decoded.values.to_pylist() == [{"id": "o1", "qty": 5}]
    assert [r.kind for r in decoded.rejects] == ["unknown message index"]


def test_json_records_in_the_registrys_format_lose_their_header() -> None:
    glue = glue_client()
    schema = {"type": "object", "properties": {"id": {"type": "integer"}}}
    version = register(glue, "reg", "jorders", "JSON", schema)
    spec = resolve(DecodeSettings(decode="json", schema="glue://reg/jorders"), glue=lambda: glue)
    decoded = decoder_for(spec, Registry(glue_client)).decode([framed(version, json.dumps({"id": 4}).encode())])
    assert decoded.values.to_pylist() == [{"id": 4}]


def test_an_unknown_registry_or_schema_is_one_line_and_an_unreachable_one_is_retryable() -> None:
    glue = glue_client()
    register(glue, "reg", "orders", "AVRO", V1)
    with pytest.raises(IllegalArgumentError, match="no such registry or schema"):
        resolve(DecodeSettings(decode="avro", schema="glue://reg/nope"), glue=lambda: glue)
    with pytest.raises(IllegalArgumentError, match="is a AVRO schema, not PROTOBUF"):
        resolve(DecodeSettings(decode="protobuf", schema="glue://reg/orders"), glue=lambda: glue)
    nowhere = glue_client(endpoint_url="http://127.0.0.1:9")
    with pytest.raises(DependencyError):
        resolve(DecodeSettings(decode="avro", schema="glue://reg/orders"), glue=lambda: nowhere)
