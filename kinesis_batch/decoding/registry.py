"""The AWS Glue Schema Registry: its record format and its schema versions.

A record in the registry's format (what the KPL, the KCL and the registry's serializers write):
byte 0 is 3 (the header version), byte 1 the compression (0 none, 5 zlib), bytes 2 to 17 the
schema version's UUID, then the datum (Avro binary, JSON, or Protobuf with its message index).

Versions are fetched with ``glue.get_schema_version`` once per process (they never change) and
cached; a version the registry does not know makes that record a dead letter. The schema a
consumer names (``glue://REGISTRY/SCHEMA``) is checked at start: unknown is one line, exit 2;
an unreachable registry is retryable (exit 4).
"""

from __future__ import annotations

import threading
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from kinesis_batch.aws import aws_call
from kinesis_batch.decoding.rejects import DECODE, Rejected
from kinesis_batch.errors import IllegalArgumentError

HEADER_VERSION, NO_COMPRESSION, ZLIB = 3, 0, 5
HEADER_BYTES = 18


@dataclass(frozen=True)
class SchemaVersion:
    """One version of a registered schema: ``data_format`` AVRO, JSON or PROTOBUF, and its text."""

    version_id: str
    data_format: str
    definition: str


def split(payload: bytes) -> tuple[str, bytes] | Rejected:
    """The schema version id and the (inflated) datum of a record in the registry's format."""
    if len(payload) < HEADER_BYTES or payload[0] != HEADER_VERSION:
        first = payload[:1].hex() or "nothing"
        return Rejected(0, DECODE, "not in the schema registry's format", f"its first byte is {first}, not 03")
    version = str(uuid.UUID(bytes=bytes(payload[2:HEADER_BYTES])))
    datum = payload[HEADER_BYTES:]
    if payload[1] == ZLIB:
        try:
            datum = zlib.decompress(datum)
        except zlib.error as exc:
            return Rejected(0, DECODE, "corrupt zlib", f"schema version {version}: {exc}")
    elif payload[1] != NO_COMPRESSION:
        return Rejected(0, DECODE, "unknown compression", f"byte {payload[1]} (known: 0 none, 5 zlib)")
    return version, datum


class Registry:
    """The registry's schema versions, cached for the process. ``client`` makes a Glue client
    (built in kinesis_batch.aws); it is made on first use."""

    _cache: ClassVar[dict[tuple[str, str], SchemaVersion | None]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, client: Callable[[], Any], where: str = "") -> None:
        self._make = client
        self._client: Any = None
        self._where = where  # the endpoint, so two registries never share cache entries

    def version(self, version_id: str) -> SchemaVersion | None:
        """The version, or None when the registry does not know it. Raises on an unreachable
        registry or a refusal (RetryableError / InvalidStateError)."""
        key = (self._where, version_id)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        found = self._fetch(SchemaVersionId=version_id)
        with self._lock:
            self._cache[key] = found
        return found

    def latest(self, registry: str, schema: str) -> SchemaVersion:
        """The newest version of ``registry``'s ``schema``; IllegalArgumentError if either is unknown."""
        found = self._fetch(
            SchemaId={"RegistryName": registry, "SchemaName": schema}, SchemaVersionNumber={"LatestVersion": True}
        )
        if found is None:
            raise IllegalArgumentError(
                f"--schema glue://{registry}/{schema}: the Glue Schema Registry has no such registry or schema"
            )
        return found

    def _fetch(self, **request: Any) -> SchemaVersion | None:
        if self._client is None:
            self._client = self._make()
        try:
            body = aws_call(
                "GetSchemaVersion",
                "the Glue Schema Registry",
                lambda: self._client.get_schema_version(**request),
                codes={"EntityNotFoundException": _Unknown},
            )
        except _Unknown:
            return None
        return SchemaVersion(str(body["SchemaVersionId"]), str(body["DataFormat"]), str(body["SchemaDefinition"]))


class _Unknown(Exception):
    """The registry has no such registry, schema or version."""


__all__ = ["HEADER_VERSION", "NO_COMPRESSION", "ZLIB", "Registry", "SchemaVersion", "split"]
