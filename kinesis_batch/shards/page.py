"""One GetRecords response as the reader uses it: its records as columns, and what it says of
the shard (next iterator, ``MillisBehindLatest``, ``ChildShards``).

Two ways to get one, the same values either way:
- **fast** (the default): botocore signs, sends, retries and translates errors as ever, but a
  successful GetRecords body never reaches its parser. A ``before-parse`` handler on the client
  (:func:`parse_pages`) decodes the JSON body with a typed msgspec decoder (``Data`` from base64
  in C, arrival times kept as epoch milliseconds) and hands botocore an empty body in its place.
  The response keeps botocore's keys; its ``Records`` are :class:`RecordColumns`, which read
  like botocore's list of dicts where something asks (a test's fault) but are columns inside.
  botocore's own parse builds a dict and a datetime per record and costs about four times as much.
- **botocore** (``KINESIS_BATCH_READER=botocore``): botocore's own parse, turned into a Page by
  :meth:`Page.from_botocore`. A way back for any doubt in production.

Why JSON, not the CBOR the Java SDK speaks: neither emulator speaks CBOR as AWS does (kinesalite
and kinesis-local send ``Data`` as base64 text inside CBOR, and kinesis-local answers every CBOR
error with an empty 500), so a CBOR path could only be tested against a stub; and the typed JSON
decoder already leaves the page's parse a small part of a read (benchmarks/README.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, overload

import msgspec

from kinesis_batch.errors import DependencyError, IllegalArgumentError

#: The environment variable that chooses the parse: ``fast`` (the default) or ``botocore``.
READER_ENV = "KINESIS_BATCH_READER"
DEFAULT_READER = "fast"
READERS = (DEFAULT_READER, "botocore")
_EVENT = "before-parse.kinesis.GetRecords"
_HANDLER_ID = "kinesis-batch-fast-page"


@dataclass(frozen=True)
class RecordColumns(Sequence[Mapping[str, Any]]):
    """A page's records as parallel columns, which index like botocore's list of record dicts
    (``ApproximateArrivalTimestamp`` a datetime, as botocore's) for whatever asks (a test's
    fault). ``arrivals_ms``: epoch milliseconds (Kinesis' own precision); ``data``: the bytes as
    sent (a KPL aggregate not yet unpacked)."""

    sequence_numbers: Sequence[str]
    arrivals_ms: Sequence[int]
    partition_keys: Sequence[str]
    data: Sequence[bytes]

    def __len__(self) -> int:
        return len(self.sequence_numbers)

    @overload
    def __getitem__(self, index: int) -> Mapping[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> RecordColumns: ...
    def __getitem__(self, index: int | slice) -> Mapping[str, Any] | RecordColumns:
        if isinstance(index, slice):
            return RecordColumns(*(column[index] for column in self._columns()))
        return {
            "SequenceNumber": self.sequence_numbers[index],
            "ApproximateArrivalTimestamp": arrival(self.arrivals_ms[index]),
            "PartitionKey": self.partition_keys[index],
            "Data": self.data[index],
        }

    def _columns(self) -> tuple[Sequence[Any], ...]:
        return self.sequence_numbers, self.arrivals_ms, self.partition_keys, self.data


@dataclass(frozen=True)
class Page:
    """One GetRecords response: its records (as columns, in shard order) and what it says of
    the shard."""

    records: RecordColumns
    next_shard_iterator: str | None = None
    millis_behind_latest: int | None = None
    child_shards: Sequence[Mapping[str, Any]] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.records)

    @property
    def size(self) -> int:
        """The bytes of its records' data and partition keys (what the read limits count)."""
        return sum(map(len, self.records.data)) + sum(map(len, self.records.partition_keys))

    @classmethod
    def from_botocore(cls, response: Mapping[str, Any]) -> Page:
        """The page of a GetRecords response as botocore returns it (its ``Records`` columns
        already, when :func:`parse_pages` made them). Raises DependencyError for an answer that
        is not a page: botocore parses a body that is not JSON (a proxy's error page) as an
        empty response, which would otherwise read as an empty page without a next iterator:
        the end of a closed shard."""
        records = response.get("Records")
        if isinstance(records, RecordColumns):
            columns = records
        else:
            try:
                columns = RecordColumns(
                    [r["SequenceNumber"] for r in records],  # type: ignore[union-attr]
                    [epoch_ms(r["ApproximateArrivalTimestamp"]) for r in records],  # type: ignore[union-attr]
                    [r["PartitionKey"] for r in records],  # type: ignore[union-attr]
                    [r["Data"] for r in records],  # type: ignore[union-attr]
                )
            except (TypeError, KeyError) as exc:
                missing = "Records" if records is None else f"a record's {exc}"
                raise DependencyError(f"GetRecords: the answer is not a page of records (no {missing})") from exc
        return cls(
            records=columns,
            next_shard_iterator=response.get("NextShardIterator"),
            millis_behind_latest=response.get("MillisBehindLatest"),
            child_shards=tuple(response.get("ChildShards") or ()),
        )


def epoch_ms(value: datetime | float) -> int:
    """An arrival time in epoch milliseconds (a datetime from botocore, or the wire's seconds)."""
    if isinstance(value, datetime):
        return round(value.timestamp() * 1000)
    return round(value * 1000)


def arrival(ms: int) -> datetime:
    """Epoch milliseconds as the UTC datetime a Record carries."""
    return datetime.fromtimestamp(ms / 1000, UTC)


class _Record(msgspec.Struct, gc=False):
    SequenceNumber: str
    ApproximateArrivalTimestamp: float
    Data: bytes  # base64 on the wire: msgspec decodes it
    PartitionKey: str


class _Body(msgspec.Struct, gc=False):
    Records: list[_Record]  # required: a body without it is no page (see Page.from_botocore)
    NextShardIterator: str | None = None
    MillisBehindLatest: int | None = None
    ChildShards: list[dict[str, Any]] | None = None


_DECODER = msgspec.json.Decoder(_Body)


def decode_json(body: bytes) -> dict[str, Any]:
    """A GetRecords response body (the JSON protocol's) as botocore would return it, but for
    its ``Records``: :class:`RecordColumns`. Raises msgspec.DecodeError on a body that is not one."""
    parsed = _DECODER.decode(body)
    records = parsed.Records
    response: dict[str, Any] = {
        "Records": RecordColumns(
            [r.SequenceNumber for r in records],
            [round(r.ApproximateArrivalTimestamp * 1000) for r in records],
            [r.PartitionKey for r in records],
            [r.Data for r in records],
        )
    }
    if parsed.NextShardIterator is not None:
        response["NextShardIterator"] = parsed.NextShardIterator
    if parsed.MillisBehindLatest is not None:
        response["MillisBehindLatest"] = parsed.MillisBehindLatest
    if parsed.ChildShards is not None:
        response["ChildShards"] = parsed.ChildShards
    return response


def chosen(environ: Mapping[str, str] | None = None) -> str:
    """The parse the environment asks for (``KINESIS_BATCH_READER``), ``fast`` when unset."""
    value = (os.environ if environ is None else environ).get(READER_ENV, "").strip().lower() or DEFAULT_READER
    if value not in READERS:
        raise IllegalArgumentError(f"{READER_ENV}={value!r}: expected one of {', '.join(READERS)}")
    return value


def parse_pages(client: Any, how: str) -> None:
    """Make ``client``'s GetRecords responses Pages the fast way (``how``: ``fast``), or leave
    them to botocore (``botocore``). Idempotent; every fetcher of the client asks alike."""
    events = client.meta.events
    if how == DEFAULT_READER:
        events.register(_EVENT, _parse_fast, unique_id=_HANDLER_ID)
    else:
        events.unregister(_EVENT, unique_id=_HANDLER_ID)


def _parse_fast(response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any) -> None:
    """botocore's before-parse hook: a successful body is decoded here, and botocore parses
    ``{}`` instead (and adds its ResponseMetadata). An error's body is botocore's to parse, so
    its codes reach the caller as ever."""
    if response_dict.get("status_code") != 200:
        return
    try:
        customized_response_dict.update(decode_json(response_dict["body"]))
    except msgspec.DecodeError:
        return  # not a page as the protocol has it: botocore's parse says what it is
    response_dict["body"] = b"{}"


__all__ = [
    "DEFAULT_READER",
    "READERS",
    "READER_ENV",
    "Page",
    "RecordColumns",
    "arrival",
    "chosen",
    "decode_json",
    "epoch_ms",
    "parse_pages",
]
