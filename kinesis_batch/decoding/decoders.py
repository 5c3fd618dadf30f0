"""The decoder a spec asks for, made where it runs (a Spark task): a file's schema, or the Glue
Schema Registry's versions named in each record's header, fetched once per process."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from kinesis_batch.decoding.decoded import Decoded, Decoder
from kinesis_batch.decoding.formats.avro import AvroDecoder, AvroSchema
from kinesis_batch.decoding.formats.json import JsonDecoder
from kinesis_batch.decoding.formats.protobuf import DescriptorSet, ProtobufDecoder, ProtoMessage, read_index
from kinesis_batch.decoding.registry import Registry, SchemaVersion, split
from kinesis_batch.decoding.rejects import DECODE, Rejected
from kinesis_batch.decoding.spec import DecodeSpec

Found = Callable[[bytes], Any]


def decoder_for(spec: DecodeSpec, registry: Registry | None = None) -> Decoder:
    """The decoder of ``spec``; ``registry`` when its records are in the registry's format."""
    settings = spec.settings
    framed = settings.from_registry
    if framed and registry is None:
        raise ValueError("records in the schema registry's format need the registry")
    if settings.decode == "json":
        json = JsonDecoder(spec.starting_fields())
        return _Unframed(json) if framed else json
    if settings.decode == "avro":
        if framed:
            assert registry is not None
            return AvroDecoder(_Versions(registry, "AVRO", lambda v: AvroSchema(v.definition, _where(v))).found)
        schema = AvroSchema(spec.schema_text or "", str(settings.schema))
        return AvroDecoder(lambda payload: (schema, payload))
    if framed:
        assert registry is not None
        return ProtobufDecoder(_Versions(registry, "PROTOBUF", _compiled).found_indexed)
    message = DescriptorSet(spec.descriptors or b"", str(settings.schema)).message(str(settings.message))
    return ProtobufDecoder(lambda payload: (message, payload))


class _Versions:
    """Each record's schema version, from its header, loaded once per version."""

    def __init__(self, registry: Registry, data_format: str, load: Callable[[SchemaVersion], Any]) -> None:
        self.registry = registry
        self.data_format = data_format
        self.load = load
        self._loaded: dict[str, Any] = {}

    def found(self, payload: bytes) -> tuple[Any, bytes] | Rejected:
        split_up = split(payload)
        if isinstance(split_up, Rejected):
            return split_up
        version_id, datum = split_up
        loaded = self._version(version_id)
        return loaded if isinstance(loaded, Rejected) else (loaded, datum)

    def found_indexed(self, payload: bytes) -> tuple[ProtoMessage, bytes] | Rejected:
        """A protobuf record: the version's descriptor set, then the message its index names."""
        found = self.found(payload)
        if isinstance(found, Rejected):
            return found
        descriptors, datum = found
        indexed = read_index(datum)
        message = descriptors.indexed_message(indexed[0]) if indexed else None
        if indexed is None or message is None:
            return Rejected(
                0, DECODE, "unknown message index", f"the record's index is not one of {descriptors.where}'s"
            )
        return message, indexed[1]

    def _version(self, version_id: str) -> Any:
        if version_id not in self._loaded:
            version = self.registry.version(version_id)
            if version is None:
                self._loaded[version_id] = Rejected(0, DECODE, "unknown schema version", version_id)
            elif version.data_format != self.data_format:
                detail = f"version {version_id} is {version.data_format}, not {self.data_format}"
                self._loaded[version_id] = Rejected(0, DECODE, "other data format", detail)
            else:
                self._loaded[version_id] = self.load(version)
        return self._loaded[version_id]


def _compiled(version: SchemaVersion) -> DescriptorSet:
    from kinesis_batch.decoding.formats.protoc import compile_proto

    where = _where(version)
    return DescriptorSet(compile_proto(version.definition, where), where)


def _where(version: SchemaVersion) -> str:
    return f"schema version {version.version_id}"


class _Unframed:
    """JSON records in the registry's format: the header taken off (the table's fields, or
    inference, type them)."""

    def __init__(self, inner: JsonDecoder) -> None:
        self.inner = inner

    def learn(self, table: pa.Schema) -> None:
        self.inner.learn(table)

    def written_routes(self, payloads: Sequence[bytes], path: tuple[str, ...]) -> list[list[Any] | None]:
        found = [split(payload) for payload in payloads]
        datums = [each[1] for each in found if not isinstance(each, Rejected)]
        inner = iter(self.inner.written_routes(datums, path))
        return [None if isinstance(each, Rejected) else next(inner) for each in found]

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        datums: list[bytes] = []
        kept: list[int] = []
        rejects: list[Rejected] = []
        for position, payload in enumerate(payloads):
            found = split(payload)
            if isinstance(found, Rejected):
                rejects.append(found.at(position))
            else:
                datums.append(found[1])
                kept.append(position)
        inner = self.inner.decode(datums)
        positions = [kept[index] for index in inner.positions]
        rejects += [reject.at(kept[reject.position]) for reject in inner.rejects]
        return Decoded(inner.values, positions, sorted(rejects, key=lambda r: r.position))


__all__ = ["decoder_for"]
