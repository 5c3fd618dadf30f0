"""At a run's start, before any lease is taken: everything the decoding settings name is read and
checked, each problem one line (exit 2): a schema file that is missing or does not parse, a
message the descriptor set lacks, a registry or schema the Glue Schema Registry does not know
(unreachable: exit 4), a transform that cannot be imported or called, a declared field with a
name of ours. What was read travels to the Spark tasks in the run's plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.columns import check_reserved
from kinesis_batch.decoding import transform
from kinesis_batch.decoding.formats.avro import AvroSchema
from kinesis_batch.decoding.formats.jsonschema import from_json_schema
from kinesis_batch.decoding.formats.protobuf import DescriptorSet
from kinesis_batch.decoding.registry import Registry
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.decoding.spec import DecodeSpec
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.routing.routes import RouteRule, is_route

GlueClient = Callable[[], Any]


def resolve(
    settings: DecodeSettings,
    glue: GlueClient | None = None,
    changes: ChangeSettings | None = None,
    routing: RouteRule | None = None,
) -> DecodeSpec:
    """The spec of ``settings``; ``glue`` makes a Glue client (for ``glue://`` schemas);
    ``changes``: the records are changes (the key and --sequence-by are checked against a
    declared schema); ``routing``: each record goes to the table its route names."""
    if settings.transform:
        transform.load(settings.transform)
    if settings.schema and Path(settings.schema).expanduser().is_dir():
        return replace(_per_route(settings, routing), changes=changes, routing=routing)
    if settings.from_registry:
        spec = _from_registry(settings, glue)
    elif settings.decode == "json":
        text = _read_text(settings.schema) if settings.schema else None
        spec = DecodeSpec(settings, declared=from_json_schema(text, f"--schema {settings.schema}") if text else None)
    elif settings.decode == "avro":
        text = _read_text(str(settings.schema))
        spec = DecodeSpec(settings, declared=AvroSchema(text, f"--schema {settings.schema}").fields, schema_text=text)
    else:
        data = _read_bytes(str(settings.schema))
        message = DescriptorSet(data, f"--schema {settings.schema}").message(str(settings.message))
        spec = DecodeSpec(settings, declared=message.fields, descriptors=data)
    if spec.declared is not None:
        check_reserved(spec.declared.names, f"--schema {settings.schema}")
    if changes is not None:
        _check_changes(changes, spec.declared, settings.schema)
    return replace(spec, changes=changes, routing=routing)


def _per_route(settings: DecodeSettings, routing: RouteRule | None) -> DecodeSpec:
    """``--schema DIR`` of a routed JSON stream: ``ROUTE.json``, a JSON Schema, declares the
    fields of that route's table; the other routes' are inferred."""
    where = f"--schema {settings.schema}"
    if routing is None or settings.decode != "json":
        raise IllegalArgumentError(f"{where} is a folder: one JSON Schema per route, with --route-by and --decode json")
    declared: dict[str, pa.Schema] = {}
    for path in sorted(Path(str(settings.schema)).expanduser().glob("*.json")):
        route, named = path.stem, f"--schema {path}"
        if not is_route(route):
            raise IllegalArgumentError(f"{named}: {route!r} cannot name a table (a file is named ROUTE.json)")
        if routing.allowed is not None and route not in routing.allowed:
            raise IllegalArgumentError(f"{named}: route {route!r} is not one of --routes")
        fields = from_json_schema(_read_text(str(path)), named)
        check_reserved(fields.names, named)
        declared[route] = fields
    return DecodeSpec(settings, declared_by_route=declared)


def _check_changes(changes: ChangeSettings, declared: pa.Schema | None, schema: str | None) -> None:
    """The key and the ordering field are fields the declared schema has."""
    if declared is None:
        return
    named = [("--key", name) for name in changes.key] + (
        [("--sequence-by", changes.sequence_by)] if changes.sequence_by else []
    )
    for flag, name in named:
        if name not in declared.names:
            raise IllegalArgumentError(f"{flag} {name}: --schema {schema} has no field {name}")


def _from_registry(settings: DecodeSettings, glue: GlueClient | None) -> DecodeSpec:
    if glue is None:
        raise IllegalArgumentError(f"--schema {settings.schema}: no Glue client to reach the registry with")
    client = glue()
    registry_name, schema_name = settings.registry_schema()
    latest = Registry(lambda: client, where=str(client.meta.endpoint_url)).latest(registry_name, schema_name)
    expected = {"json": "JSON", "avro": "AVRO", "protobuf": "PROTOBUF"}[settings.decode]
    where = f"--schema {settings.schema}"
    if latest.data_format != expected:
        raise IllegalArgumentError(
            f"{where} is a {latest.data_format} schema, not {expected} (--decode {settings.decode})"
        )
    if expected == "JSON":
        declared = from_json_schema(latest.definition, where)
    elif expected == "AVRO":
        declared = AvroSchema(latest.definition, where).fields
    else:
        from kinesis_batch.decoding.formats.protoc import compile_proto

        descriptors = DescriptorSet(compile_proto(latest.definition, where), where)
        message = descriptors.message(settings.message) if settings.message else descriptors.indexed_message(0)
        if message is None:
            raise IllegalArgumentError(f"{where} defines no message")
        declared = message.fields
    endpoint = {"endpoint_url": client.meta.endpoint_url, "region": client.meta.region_name}
    return DecodeSpec(settings, declared=declared, glue=endpoint)


def _read_text(path: str) -> str:
    return _read_bytes(path).decode("utf-8", errors="replace")


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise IllegalArgumentError(f"--schema {path}: cannot read it: {exc.strerror or exc}") from exc


__all__ = ["resolve"]
