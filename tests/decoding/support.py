"""Records as producers on AWS write them: Avro datums, protobuf messages, and the Glue Schema
Registry's framing (what the KPL/KCL's registry serializers put around each)."""

from __future__ import annotations

import io
import json
import uuid
import zlib
from typing import Any

from kinesis_batch.aws import glue_client
from kinesis_batch.decoding.formats.protobuf import DescriptorSet
from kinesis_batch.decoding.formats.protoc import compile_proto
from tests.streams import put


def avro_datum(schema: dict[str, Any], value: dict[str, Any]) -> bytes:
    import fastavro

    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def framed(version_id: str, datum: bytes, *, compress: bool = False) -> bytes:
    """A record in the Glue Schema Registry's format: 3, compression, the version's UUID, datum."""
    body = zlib.compress(datum) if compress else datum
    return bytes([3, 5 if compress else 0]) + uuid.UUID(version_id).bytes + body


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def register(glue: Any, registry: str, schema: str, data_format: str, definition: str | dict[str, Any]) -> str:
    """Create the registry (once) and the schema, or a new version of it; returns the version id."""
    text = definition if isinstance(definition, str) else json.dumps(definition)
    if registry not in [r["RegistryName"] for r in glue.list_registries().get("Registries", [])]:
        glue.create_registry(RegistryName=registry)
    try:
        made = glue.create_schema(
            RegistryId={"RegistryName": registry},
            SchemaName=schema,
            DataFormat=data_format,
            Compatibility="NONE",
            SchemaDefinition=text,
        )
    except glue.exceptions.AlreadyExistsException:
        made = glue.register_schema_version(
            SchemaId={"RegistryName": registry, "SchemaName": schema}, SchemaDefinition=text
        )
    return str(made["SchemaVersionId"])


def message_class(proto: str, name: str) -> Any:
    """The generated class of message ``name`` of ``.proto`` text (protoc from grpcio-tools)."""
    from google.protobuf import message_factory

    descriptors = DescriptorSet(compile_proto(proto, "test.proto"), "test.proto")
    return message_factory.GetMessageClass(descriptors.message(name).descriptor)


def descriptor_set(proto: str) -> bytes:
    return compile_proto(proto, "test.proto")


def put_payloads(kinesis: Any, name: str, payloads: list[bytes], *, keys: int = 8) -> list[bytes]:
    """Put ``payloads`` in order over ``keys`` partition keys; returns them."""
    for first in range(0, len(payloads), 500):
        batch = [
            {"Data": p, "PartitionKey": f"k{(first + i) % keys}"} for i, p in enumerate(payloads[first : first + 500])
        ]
        response = kinesis.put_records(StreamName=name, Records=batch)
        assert response.get("FailedRecordCount", 0) == 0, response
    return payloads


def dead_letter_args(output: tuple[str, ...]) -> tuple[str, ...]:
    """The output arguments of the dead-letter output beside ``output`` (output_args' form)."""
    options = dict(zip(output[::2], output[1::2], strict=True))
    options["--output"] = options["--output"].rstrip("/") + "_dead_letter"
    return tuple(item for pair in options.items() for item in pair)


#: The schema of the registry's streams below, and the later version a run's start resolves.
ORDER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
ORDER_LATER = {**ORDER, "fields": [*ORDER["fields"], {"name": "note", "type": ["null", "string"], "default": None}]}


def registry_stream(kinesis: Any, stream: str, *, older: bool = False) -> str:
    """Four Avro records of ``ORDER`` framed for a new registry, then one that does not decode,
    put on ``stream``; the registry's name. ``older``: a later version is registered after them,
    so a run's start resolves that one and its tasks must fetch theirs from the registry."""
    registry = f"r{uuid.uuid4().hex[:8]}"
    version = register(glue_client(), registry, "orders", "AVRO", ORDER)
    if older:
        register(glue_client(), registry, "orders", "AVRO", ORDER_LATER)
    put_payloads(kinesis, stream, [framed(version, avro_datum(ORDER, {"id": i})) for i in range(4)])
    put(kinesis, stream, 1, start=4, payload=lambda i: b"not avro")  # a dead letter
    return registry
