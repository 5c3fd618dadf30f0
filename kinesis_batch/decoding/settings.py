"""How a consumer turns records into rows: the user's choices, checked when made (one line,
IllegalArgumentError, naming the setting). The same value comes from the command line, an
Airflow stream config or DAG params, and a Dagster stream definition.

``raw`` (the default) keeps each record's bytes in ``data``, as always. The other decoders make
typed columns, and every record that does not fit goes to the dead-letter output.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from kinesis_batch.errors import IllegalArgumentError

DECODERS = ("raw", "json", "avro", "protobuf")
DECOMPRESSION = ("auto", "gzip", "none")
ON_BAD_RECORD = ("dead-letter", "fail")
SCHEMA_EVOLUTION = ("add-columns", "fail")
GLUE = "glue://"  # a schema in the AWS Glue Schema Registry: glue://REGISTRY/SCHEMA


@dataclass(frozen=True)
class DecodeSettings:
    """``decode``: raw, json, avro or protobuf. ``schema``: where the fields come from: a file
    (JSON Schema for json, an Avro schema for avro, a ``protoc --descriptor_set_out`` file for
    protobuf) or ``glue://REGISTRY/SCHEMA`` (records in the Glue Schema Registry's format); json
    without one infers the fields, or takes the existing table's. ``message``: the protobuf
    message. ``decompress``: auto (gzip when a payload starts like gzip), gzip or none.
    ``transform``: ``module:function`` or a built-in (``cloudwatch-logs``). ``dead_letter_output``:
    where records that do not fit go (default: beside the output)."""

    decode: str = "raw"
    schema: str | None = None
    message: str | None = None
    decompress: str = "auto"
    transform: str | None = None
    dead_letter_output: str | None = None
    on_bad_record: str = "dead-letter"
    schema_evolution: str = "add-columns"

    def __post_init__(self) -> None:
        _choice("--decode", self.decode, DECODERS)
        _choice("--decompress", self.decompress, DECOMPRESSION)
        _choice("--on-bad-record", self.on_bad_record, ON_BAD_RECORD)
        _choice("--schema-evolution", self.schema_evolution, SCHEMA_EVOLUTION)
        if self.decode == "raw":
            self._raw_only()
            return
        if self.decode == "avro" and not self.schema:
            raise IllegalArgumentError("--decode avro needs --schema: an Avro schema file, or glue://REGISTRY/SCHEMA")
        if self.decode == "protobuf":
            if not self.schema:
                raise IllegalArgumentError(
                    "--decode protobuf needs --schema: a descriptor set (protoc --descriptor_set_out) with --message, "
                    "or glue://REGISTRY/SCHEMA"
                )
            if not self.message and not self.from_registry:
                raise IllegalArgumentError("--decode protobuf with a descriptor set needs --message (a message name)")
        elif self.message:
            raise IllegalArgumentError("--message goes with --decode protobuf only")
        if self.from_registry:
            self.registry_schema()  # checks the form
        if self.transform is not None and not self.transform.strip():
            raise IllegalArgumentError("--transform: give module:function or a built-in name")

    def _raw_only(self) -> None:
        given = {
            "--schema": self.schema,
            "--message": self.message,
            "--transform": self.transform,
            "--dead-letter-output": self.dead_letter_output,
        }
        named = [flag for flag, value in given.items() if value]
        if named:
            raise IllegalArgumentError(f"{', '.join(named)} need(s) --decode json, avro or protobuf (raw keeps bytes)")
        if self.decompress not in ("auto", "none"):
            raise IllegalArgumentError("--decompress applies to decoded records: raw rows keep the bytes as sent")

    @property
    def decoding(self) -> bool:
        """False for raw rows: no pipeline, no dead-letter output."""
        return self.decode != "raw"

    @property
    def from_registry(self) -> bool:
        return bool(self.schema and self.schema.startswith(GLUE))

    def registry_schema(self) -> tuple[str, str]:
        """(registry, schema) of ``glue://REGISTRY/SCHEMA``."""
        registry, _, schema = (self.schema or "").removeprefix(GLUE).partition("/")
        if not registry or not schema or "/" in schema:
            raise IllegalArgumentError(f"--schema {self.schema}: a registry schema is glue://REGISTRY/SCHEMA")
        return registry, schema

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, body: dict[str, Any] | None) -> DecodeSettings:
        """From a JSON object (a DAG's params, a stream config); unknown keys are refused."""
        body = dict(body or {})
        known = {field.name for field in fields(cls)}
        unknown = sorted(set(body) - known)
        if unknown:
            raise IllegalArgumentError(
                f"unknown decode setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**{key: value for key, value in body.items() if value is not None})


def _choice(flag: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise IllegalArgumentError(f"{flag} {value!r}: choose one of {', '.join(choices)}")


RAW = DecodeSettings()


__all__ = ["DECODERS", "DECOMPRESSION", "GLUE", "ON_BAD_RECORD", "RAW", "SCHEMA_EVOLUTION", "DecodeSettings"]
