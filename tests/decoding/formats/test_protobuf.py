"""Protobuf records by a message of a descriptor set: each protobuf type as its column type,
presence kept (absent messages are null, proto3 scalars their zero), and the registry's message
index counting the messages the way its serializer does."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pyarrow as pa
import pytest

from kinesis_batch.decoding.formats.protobuf import DescriptorSet, ProtobufDecoder, read_index
from kinesis_batch.errors import IllegalArgumentError
from tests.decoding.support import descriptor_set, message_class, varint

PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Order {
  string id = 1;
  int64 qty = 2;
  uint64 big = 3;
  float price = 4;
  optional double discount = 5;
  google.protobuf.Timestamp at = 6;
  google.protobuf.StringValue note = 7;
  repeated Item items = 8;
  map<string, int32> attrs = 9;
  Kind kind = 10;
  Item first = 11;
  message Item { string sku = 1; }
  enum Kind { A = 0; B = 1; }
}
message Ack { bool ok = 1; }
"""


def test_every_protobuf_type_is_its_column_type_and_presence_is_kept() -> None:
    message = DescriptorSet(descriptor_set(PROTO), "orders.desc").message("Order")
    kinds = {field.name: field.type for field in message.fields}
    assert kinds == {
        "id": pa.string(), "qty": pa.int64(), "big": pa.decimal128(20, 0), "price": pa.float32(),
        "discount": pa.float64(), "at": pa.timestamp("us", tz="UTC"), "note": pa.string(),
        "items": pa.list_(pa.struct([("sku", pa.string())])), "attrs": pa.map_(pa.string(), pa.int32()),
        "kind": pa.string(), "first": pa.struct([("sku", pa.string())]),
    }  # fmt: skip
    Order = message_class(PROTO, "shop.Order")
    order = Order(id="o1", big=2**64 - 1, kind=1)
    order.items.add(sku="s")
    order.attrs["k"] = 7
    order.at.FromDatetime(datetime(2026, 11, 25, 10, 0, 0, 123456, tzinfo=UTC))
    decoded = ProtobufDecoder(lambda payload: (message, payload)).decode([order.SerializeToString(), b"\xff\xff"])
    (row,) = decoded.values.to_pylist()
    assert row["big"] == Decimal(2**64 - 1) and row["qty"] == 0 and row["discount"] is None
    assert row["at"] == datetime(2026, 11, 25, 10, 0, 0, 123456, tzinfo=UTC)
    assert row["note"] is None and row["first"] is None and row["kind"] == "B"
    assert row["items"] == [{"sku": "s"}] and row["attrs"] == [("k", 7)]
    assert [r.kind for r in decoded.rejects] == ["not a shop.Order message"]


def test_the_registrys_message_index_counts_every_message_sorted_by_full_name() -> None:
    descriptors = DescriptorSet(descriptor_set(PROTO), "orders.desc")
    assert descriptors.indexed == ["shop.Ack", "shop.Order", "shop.Order.Item"]
    assert descriptors.indexed_message(1).name == "shop.Order"  # type: ignore[union-attr]
    assert descriptors.indexed_message(3) is None
    assert read_index(varint(300) + b"rest") == (300, b"rest")


@pytest.mark.parametrize(
    ("proto", "message", "says"),
    [
        (PROTO, "Missing", "has no message Missing"),
        ('syntax = "proto3"; message Node { Node next = 1; }', "Node", "inside itself"),
    ],
)
def test_a_message_that_cannot_be_columns_is_refused(proto: str, message: str, says: str) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        DescriptorSet(descriptor_set(proto), "set.desc").message(message)


def test_a_file_that_is_no_descriptor_set_is_refused() -> None:
    with pytest.raises(IllegalArgumentError, match="is not a protobuf descriptor set"):
        DescriptorSet(b"\x0a\x05hello", "set.desc")
