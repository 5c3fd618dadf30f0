"""Protobuf records into Arrow rows, by a message of a descriptor set (``protoc
--descriptor_set_out=FILE --include_imports``), or by the Glue Schema Registry's ``.proto`` text
(compiled with grpcio-tools' protoc) and the message index each record carries.

Types: int32, sint32, sfixed32 (int32); int64, sint64, sfixed64, uint32, fixed32 (int64);
uint64, fixed64 (decimal(20, 0): exact, where no signed integer is); float, double, bool,
string, bytes (binary); enum (the value's name); message (struct; absent is null); repeated
(list); map (map); ``google.protobuf.Timestamp`` (a UTC timestamp) and the wrapper types (their
value, absent is null). A scalar without presence is never null (proto3 gives it its zero). A
recursive message has no column type: refused at start, naming the field.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError

from kinesis_batch.decoding.decoded import Decoded, combine
from kinesis_batch.decoding.rejects import DECODE, Rejected
from kinesis_batch.errors import IllegalArgumentError

F = FieldDescriptor
_SCALARS = {
    F.TYPE_INT32: pa.int32(),
    F.TYPE_SINT32: pa.int32(),
    F.TYPE_SFIXED32: pa.int32(),
    F.TYPE_INT64: pa.int64(),
    F.TYPE_SINT64: pa.int64(),
    F.TYPE_SFIXED64: pa.int64(),
    F.TYPE_UINT32: pa.int64(),
    F.TYPE_FIXED32: pa.int64(),
    F.TYPE_UINT64: pa.decimal128(20, 0),
    F.TYPE_FIXED64: pa.decimal128(20, 0),
    F.TYPE_FLOAT: pa.float32(),
    F.TYPE_DOUBLE: pa.float64(),
    F.TYPE_BOOL: pa.bool_(),
    F.TYPE_STRING: pa.string(),
    F.TYPE_BYTES: pa.binary(),
    F.TYPE_ENUM: pa.string(),
}
TIMESTAMP = "google.protobuf.Timestamp"
WRAPPERS = {f"google.protobuf.{name}Value" for name in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32")} | {
    "google.protobuf.BoolValue",
    "google.protobuf.StringValue",
    "google.protobuf.BytesValue",
}


class ProtoMessage:
    """One message type: its class (to parse), the Arrow type of its rows, and a converter of a
    parsed message into a row."""

    def __init__(self, descriptor: Descriptor, where: str) -> None:
        self.descriptor = descriptor
        self.name = descriptor.full_name
        self.kind = _Translator(where).message(descriptor, "")
        self._message_class = message_factory.GetMessageClass(descriptor)
        self._row = _converter(descriptor)

    @property
    def fields(self) -> pa.Schema:
        return pa.schema([self.kind.field(i) for i in range(self.kind.num_fields)])

    def read(self, datum: bytes) -> tuple[Any, ...]:
        message = self._message_class()
        message.ParseFromString(datum)
        return self._row(message)


class DescriptorSet:
    """A serialized descriptor set, loaded: its pool, and the messages of its last file (the one
    the others are imports of) in the order the registry's message index counts them."""

    def __init__(self, data: bytes, where: str) -> None:
        self.where = where
        self.pool = descriptor_pool.DescriptorPool()
        files = descriptor_pb2.FileDescriptorSet()
        try:
            files.ParseFromString(data)
            for file in files.file:
                self.pool.Add(file)
        except Exception as exc:  # DecodeError, or a TypeError of a file whose imports are missing
            raise IllegalArgumentError(
                f"{where} is not a protobuf descriptor set ({exc}); make it with "
                "protoc --descriptor_set_out=FILE --include_imports"
            ) from exc
        if not files.file:
            raise IllegalArgumentError(f"{where} holds no .proto file")
        self.names = [name for file in files.file for name in _message_names(file)]
        self.indexed = sorted(_message_names(files.file[-1]))  # the registry's message index
        self._messages: dict[str, ProtoMessage] = {}

    def message(self, name: str) -> ProtoMessage:
        """``name``: a full name, or a name only one message has."""
        matches = [full for full in self.names if full == name or full.rsplit(".", 1)[-1] == name]
        if len(matches) != 1:
            what = "has no message" if not matches else "has several messages named"
            raise IllegalArgumentError(f"--message {name}: {self.where} {what} {name} (it has {', '.join(self.names)})")
        return self._loaded(matches[0])

    def indexed_message(self, index: int) -> ProtoMessage | None:
        """The message the registry's index ``index`` names; None when out of range."""
        return self._loaded(self.indexed[index]) if 0 <= index < len(self.indexed) else None

    def _loaded(self, full: str) -> ProtoMessage:
        if full not in self._messages:
            self._messages[full] = ProtoMessage(self.pool.FindMessageTypeByName(full), self.where)
        return self._messages[full]


def read_index(datum: bytes) -> tuple[int, bytes] | None:
    """The registry's message index (an unsigned varint) and the message's bytes after it."""
    value, shift = 0, 0
    for position, byte in enumerate(datum[:5]):
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, datum[position + 1 :]
        shift += 7
    return None


class ProtobufDecoder:
    """``message_of(payload)``: the message type and the bytes of one payload (the same message
    for every payload, or the registry's version and index in its header), or a Rejected."""

    def __init__(self, message_of: Callable[[bytes], tuple[ProtoMessage, bytes] | Rejected]) -> None:
        self._message_of = message_of

    def learn(self, table: pa.Schema) -> None:
        """The message types every field: the table adds nothing to decoding."""

    def written_routes(self, payloads: Sequence[bytes], path: tuple[str, ...]) -> list[list[Any] | None]:
        """None each: the message types every value, whatever the table, so a record this
        decoder rejects it cannot read a route from either."""
        return [None] * len(payloads)

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        groups: dict[int, tuple[ProtoMessage, list[Any], list[int]]] = {}
        rejects: list[Rejected] = []
        for position, payload in enumerate(payloads):
            found = self._message_of(payload)
            if isinstance(found, Rejected):
                rejects.append(found.at(position))
                continue
            message, datum = found
            try:
                row = message.read(datum)
            except (DecodeError, RuntimeError, ValueError) as exc:
                rejects.append(Rejected(position, DECODE, f"not a {message.name} message", str(exc)[:160]))
                continue
            _, rows, positions = groups.setdefault(id(message), (message, [], []))
            rows.append(row)
            positions.append(position)
        arrays = [(pa.array(rows, type=message.kind), positions) for message, rows, positions in groups.values()]
        return combine(arrays, rejects)


def _message_names(file: descriptor_pb2.FileDescriptorProto) -> list[str]:
    package = f"{file.package}." if file.package else ""
    names: list[str] = []
    queue = [(package, message) for message in file.message_type]
    while queue:  # level by level, as the registry's serializer walks them
        prefix, message = queue.pop(0)
        full = f"{prefix}{message.name}"
        if not message.options.map_entry:
            names.append(full)
        queue.extend((f"{full}.", nested) for nested in message.nested_type)
    return names


class _Translator:
    def __init__(self, where: str) -> None:
        self.where = where
        self._open: set[str] = set()

    def message(self, descriptor: Descriptor, path: str) -> pa.DataType:
        if descriptor.full_name in self._open:
            raise IllegalArgumentError(
                f"{self.where}: field {path} holds message {descriptor.full_name} inside itself "
                "(a recursive message has no column type)"
            )
        self._open.add(descriptor.full_name)
        try:
            prefix = f"{path}." if path else ""
            return pa.struct([(f.name, self.field(f, f"{prefix}{f.name}")) for f in descriptor.fields])
        finally:
            self._open.discard(descriptor.full_name)

    def field(self, field: FieldDescriptor, path: str) -> pa.DataType:
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            key, value = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
            return pa.map_(self.single(key, path), self.single(value, f"{path}.*"))
        single = self.single(field, path)
        return pa.list_(single) if field.is_repeated else single

    def single(self, field: FieldDescriptor, path: str) -> pa.DataType:
        if field.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
            name = field.message_type.full_name
            if name == TIMESTAMP:
                return pa.timestamp("us", tz="UTC")
            if name in WRAPPERS:
                return self.single(field.message_type.fields_by_name["value"], path)
            return self.message(field.message_type, path)
        return _SCALARS[field.type]


def _converter(descriptor: Descriptor) -> Callable[[Any], tuple[Any, ...]]:
    """A function from a parsed message to its row, a tuple in the fields' order (built once per
    message type). Per-record Python is the cost of this format, so the plain scalars (most
    fields) are read in one C call, and only the others get a Python function each."""
    fields = list(descriptor.fields)
    if not fields:
        return lambda message: ()
    getter = operator.attrgetter(*(field.name for field in fields))
    everything: Callable[[Any], tuple[Any, ...]] = (
        getter if len(fields) > 1 else lambda message: (getter(message),)  # one name: no tuple
    )
    special = [(position, _reader(field)) for position, field in enumerate(fields) if not _plain(field)]
    if not special:
        return everything

    def row(message: Any) -> tuple[Any, ...]:
        values = list(everything(message))
        for position, read in special:
            values[position] = read(message, values[position])
        return tuple(values)

    return row


def _plain(field: FieldDescriptor) -> bool:
    """A value Arrow takes as the message holds it: a scalar that is never absent, not an enum."""
    return not field.is_repeated and not field.has_presence and field.type not in (F.TYPE_ENUM, F.TYPE_MESSAGE)


def _reader(field: FieldDescriptor) -> Callable[[Any, Any], Any]:
    """How a field's value (``message.<name>``, given) becomes a row's value."""
    name = field.name
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value_of = _value(field.message_type.fields_by_name["value"])
        return lambda message, held: [(key, value_of(value)) for key, value in held.items()]
    value = _value(field)
    if field.is_repeated:
        return lambda message, held: [value(item) for item in held]
    if field.has_presence:
        return lambda message, held: value(held) if message.HasField(name) else None
    return lambda message, held: value(held)


def _value(field: FieldDescriptor) -> Callable[[Any], Any]:
    """How one value of ``field`` becomes a row's value."""
    if field.type == F.TYPE_ENUM:
        names = {number: value.name for number, value in field.enum_type.values_by_number.items()}
        return lambda number: names.get(number, str(number))
    if field.type not in (F.TYPE_MESSAGE, F.TYPE_GROUP):
        return lambda value: value
    name = field.message_type.full_name
    if name == TIMESTAMP:  # microseconds since the epoch: Arrow takes them as the timestamp column's value
        return lambda stamp: stamp.seconds * 1_000_000 + stamp.nanos // 1000
    if name in WRAPPERS:
        return lambda wrapper: wrapper.value
    return _converter(field.message_type)


__all__ = ["DescriptorSet", "ProtoMessage", "ProtobufDecoder", "read_index"]
