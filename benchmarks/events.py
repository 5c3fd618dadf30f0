"""The typed benchmarks' events: one clickstream event of 20 fields (nested objects, lists of
objects, timestamps, an integer past 2**53), and its three encodings, each with the schema a
producer declares: JSON (about 1 KiB, with a JSON Schema), Avro in the Glue Schema Registry's
record format (the version registered in the stack's Glue), Protobuf (with a descriptor set).
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
KINDS = ("view", "click", "add_to_cart", "purchase")
COUNTRIES = ("FR", "DE", "US", "JP", "BR", "IN")
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 3


def event(i: int) -> dict[str, Any]:
    """Event ``i``: the same fields every time, values that vary with ``i``."""
    at = START + timedelta(milliseconds=37 * i)
    return {
        "event_id": str(uuid.UUID(int=i * 7_919 + 1)),
        "event_type": KINDS[i % 4],
        "event_time": at,
        "received_at_ms": int(at.timestamp() * 1000) + 250,
        "schema_version": 3,
        "big_id": 9_007_199_254_740_993 + i,  # past 2**53: exact only as int64
        "user": {
            "id": 10_000_000 + i % 50_000,
            "name": f"user-{i % 50_000}",
            "email": f"user{i % 50_000}@example.com",
            "country": COUNTRIES[i % 6],
            "premium": i % 7 == 0,
        },
        "session": {
            "id": f"s-{i // 20:012d}",
            "ip": f"10.{i % 250}.{i % 199}.{i % 97}",
            "device": {"os": ("ios", "android", "linux")[i % 3], "browser": "firefox", "version": f"13{i % 10}.0"},
        },
        "page": {
            "url": f"https://shop.example.com/catalog/category-{i % 40}/product-{i % 5_000}?ref=campaign-{i % 12}",
            "referrer": f"https://search.example.org/?q=product+{i % 5_000}",
            "title": f"Product {i % 5_000}: a very good product in category {i % 40}",
        },
        "items": [
            {"sku": f"sku-{(i + k) % 9_000:05d}", "qty": 1 + k, "price": 9.99 + k + (i % 100) / 100} for k in range(3)
        ],
        "tags": ["web", KINDS[i % 4], f"cohort-{i % 9}"],
        "experiment_ids": [i % 13, 100 + i % 17],
        "amount": round(19.5 + (i % 1_000) / 10, 2),
        "currency": "EUR",
        "quantity": 1 + i % 5,
        "is_test": i % 1_000 == 0,
        "latency_ms": 12.5 + (i % 300) / 3,
        "user_agent": "Mozilla/5.0 (X11; Linux x86_64; rv:139.0) Gecko/20100101 Firefox/139.0 " + f"build/{i % 64}",
        "message": FILLER[: 20 + i % 40],
    }


def _as_json(value: Any) -> Any:
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z") if isinstance(value, datetime) else value


def json_payload(i: int) -> bytes:
    return json.dumps({key: _as_json(value) for key, value in event(i).items()}).encode()


def json_schema() -> dict[str, Any]:
    """The JSON Schema a producer of these events declares (``event_time`` a date-time)."""
    s, i, n, b = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}

    def obj(**properties: Any) -> dict[str, Any]:
        return {"type": "object", "properties": properties}

    return obj(
        event_id=s, event_type=s, event_time={"type": "string", "format": "date-time"}, received_at_ms=i,
        schema_version=i, big_id=i, user=obj(id=i, name=s, email=s, country=s, premium=b),
        session=obj(id=s, ip=s, device=obj(os=s, browser=s, version=s)), page=obj(url=s, referrer=s, title=s),
        items={"type": "array", "items": obj(sku=s, qty=i, price=n)}, tags={"type": "array", "items": s},
        experiment_ids={"type": "array", "items": i}, amount=n, currency=s, quantity=i, is_test=b, latency_ms=n,
        user_agent=s, message=s,
    )  # fmt: skip


def spark_ddl() -> str:
    """The same schema as users write it for ``from_json``."""
    return (
        "event_id STRING, event_type STRING, event_time TIMESTAMP, received_at_ms BIGINT, schema_version BIGINT, "
        "big_id BIGINT, user STRUCT<id: BIGINT, name: STRING, email: STRING, country: STRING, premium: BOOLEAN>, "
        "session STRUCT<id: STRING, ip: STRING, device: STRUCT<os: STRING, browser: STRING, version: STRING>>, "
        "page STRUCT<url: STRING, referrer: STRING, title: STRING>, "
        "items ARRAY<STRUCT<sku: STRING, qty: BIGINT, price: DOUBLE>>, tags ARRAY<STRING>, "
        "experiment_ids ARRAY<BIGINT>, amount DOUBLE, currency STRING, quantity BIGINT, is_test BOOLEAN, "
        "latency_ms DOUBLE, user_agent STRING, message STRING"
    )


def avro_schema() -> dict[str, Any]:
    def record(name: str, /, **fields: Any) -> dict[str, Any]:
        return {"type": "record", "name": name, "fields": [{"name": k, "type": t} for k, t in fields.items()]}

    return record(
        "Event", event_id="string", event_type="string",
        event_time={"type": "long", "logicalType": "timestamp-millis"}, received_at_ms="long", schema_version="int",
        big_id="long",
        user=record("User", id="long", name="string", email="string", country="string", premium="boolean"),
        session=record("Session", id="string", ip="string",
                       device=record("Device", os="string", browser="string", version="string")),
        page=record("Page", url="string", referrer="string", title="string"),
        items={"type": "array", "items": record("Item", sku="string", qty="int", price="double")},
        tags={"type": "array", "items": "string"}, experiment_ids={"type": "array", "items": "long"},
        amount="double", currency="string", quantity="int", is_test="boolean", latency_ms="double",
        user_agent="string", message="string",
    )  # fmt: skip


PROTO = """syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message Device { string os = 1; string browser = 2; string version = 3; }
message User { int64 id = 1; string name = 2; string email = 3; string country = 4; bool premium = 5; }
message Session { string id = 1; string ip = 2; Device device = 3; }
message Page { string url = 1; string referrer = 2; string title = 3; }
message Item { string sku = 1; int32 qty = 2; double price = 3; }
message Event {
  string event_id = 1; string event_type = 2; google.protobuf.Timestamp event_time = 3; int64 received_at_ms = 4;
  int32 schema_version = 5; int64 big_id = 6; User user = 7; Session session = 8; Page page = 9;
  repeated Item items = 10; repeated string tags = 11; repeated int64 experiment_ids = 12; double amount = 13;
  string currency = 14; int32 quantity = 15; bool is_test = 16; double latency_ms = 17; string user_agent = 18;
  string message = 19;
}
"""


@dataclass(frozen=True)
class Encoding:
    """One encoding of the events: how record ``i`` is made, and the flags that decode it."""

    name: str
    payload: Callable[[int], bytes]
    flags: tuple[str, ...]


def encodings(folder: Path, glue: Any) -> dict[str, Encoding]:
    """JSON, Avro (registered in ``glue``) and Protobuf, their schema files written in ``folder``."""
    return {
        "json": _json(folder),
        "avro": _avro(glue),
        "protobuf": _protobuf(folder),
    }


def _json(folder: Path) -> Encoding:
    path = folder / "events.schema.json"
    path.write_text(json.dumps(json_schema()))
    return Encoding("json", json_payload, ("--decode", "json", "--schema", str(path)))


def _avro(glue: Any) -> Encoding:
    import fastavro

    schema = avro_schema()
    parsed = fastavro.parse_schema(schema)
    if "bench" not in [r["RegistryName"] for r in glue.list_registries().get("Registries", [])]:
        glue.create_registry(RegistryName="bench")
    made = glue.create_schema(
        RegistryId={"RegistryName": "bench"},
        SchemaName=f"events-{uuid.uuid4().hex[:8]}",
        DataFormat="AVRO",
        Compatibility="NONE",
        SchemaDefinition=json.dumps(schema),
    )
    header = bytes([3, 0]) + uuid.UUID(made["SchemaVersionId"]).bytes  # version 3, no compression, the version

    def payload(i: int) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, event(i))
        return header + out.getvalue()

    return Encoding("avro", payload, ("--decode", "avro", "--schema", f"glue://bench/{made['SchemaName']}"))


def _protobuf(folder: Path) -> Encoding:
    from google.protobuf import message_factory

    from kinesis_batch.decoding.formats.protobuf import DescriptorSet
    from kinesis_batch.decoding.formats.protoc import compile_proto

    data = compile_proto(PROTO, "events.proto")
    path = folder / "events.desc"
    path.write_bytes(data)
    message = message_factory.GetMessageClass(DescriptorSet(data, str(path)).message("bench.Event").descriptor)

    def payload(i: int) -> bytes:
        values = event(i)
        at = values.pop("event_time")
        made = message(**values)
        made.event_time.FromDatetime(at)
        return bytes(made.SerializeToString())

    return Encoding("protobuf", payload, ("--decode", "protobuf", "--schema", str(path), "--message", "bench.Event"))


__all__ = ["Encoding", "encodings", "event", "json_payload", "spark_ddl"]
