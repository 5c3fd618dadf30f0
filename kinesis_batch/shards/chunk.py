"""A page's user records as columns: what a read hands on, with no object per record.

Pure: a :class:`Chunk` is made from a fetched page's records (KPL aggregates unpacked, kinesis_batch.shards.
deaggregation), trimmed of what a resume already read, cut at a row count, and joined with
others; its records are made one by one only for a caller that asks (:meth:`Chunk.records`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kinesis_batch.shards.deaggregation import MAGIC, sub_records
from kinesis_batch.shards.model import Record
from kinesis_batch.shards.page import RecordColumns, arrival


@dataclass(frozen=True)
class Chunk:
    """User records of one shard as parallel columns, in shard order. ``explicit_hash_keys`` is
    None when no record has one (they come only inside KPL aggregates)."""

    shard_id: str
    sequence_numbers: Sequence[str]
    sub_sequence_numbers: Sequence[int]
    partition_keys: Sequence[str]
    data: Sequence[bytes]
    arrivals_ms: Sequence[int]
    explicit_hash_keys: Sequence[str | None] | None = None

    def __len__(self) -> int:
        return len(self.sequence_numbers)

    @property
    def size(self) -> int:
        """The bytes of its records' data."""
        return sum(map(len, self.data))

    def records(self) -> Iterator[Record]:
        """Its records, one object each."""
        hash_keys = self.explicit_hash_keys or [None] * len(self)
        last_ms, when = -1, arrival(0)
        for sequence, sub, key, data, ms, hash_key in zip(
            self.sequence_numbers,
            self.sub_sequence_numbers,
            self.partition_keys,
            self.data,
            self.arrivals_ms,
            hash_keys,
            strict=True,
        ):
            if ms != last_ms:  # records of one put share their arrival: one datetime for them
                last_ms, when = ms, arrival(ms)
            yield Record(self.shard_id, sequence, sub, key, data, when, hash_key)

    def after(self, position: tuple[int, int]) -> Chunk:
        """Without its leading records at or below ``position`` (sequence, sub-sequence): what
        a resume after that checkpoint already read. Only the leading ones are compared."""
        skipped = 0
        for sequence, sub in zip(self.sequence_numbers, self.sub_sequence_numbers, strict=True):
            if (int(sequence), sub) > position:
                break
            skipped += 1
        return self.cut(skipped, len(self))

    def cut(self, start: int, stop: int) -> Chunk:
        """Its records ``start`` to ``stop`` (excluded)."""
        if (start, stop) == (0, len(self)):
            return self
        hash_keys = self.explicit_hash_keys
        return Chunk(
            self.shard_id,
            self.sequence_numbers[start:stop],
            self.sub_sequence_numbers[start:stop],
            self.partition_keys[start:stop],
            self.data[start:stop],
            self.arrivals_ms[start:stop],
            hash_keys[start:stop] if hash_keys is not None else None,
        )

    @classmethod
    def join(cls, chunks: Sequence[Chunk]) -> Chunk:
        """One chunk of ``chunks`` (at least one, all of one shard), in order."""
        if len(chunks) == 1:
            return chunks[0]
        hash_keys = None
        if any(c.explicit_hash_keys is not None for c in chunks):
            hash_keys = [k for c in chunks for k in (c.explicit_hash_keys or [None] * len(c))]
        return cls(
            chunks[0].shard_id,
            [v for c in chunks for v in c.sequence_numbers],
            [v for c in chunks for v in c.sub_sequence_numbers],
            [v for c in chunks for v in c.partition_keys],
            [v for c in chunks for v in c.data],
            [v for c in chunks for v in c.arrivals_ms],
            hash_keys,
        )


def unpack(shard_id: str, records: RecordColumns) -> Chunk:
    """The user records of a page's ``records``: each KPL aggregate unpacked into its
    sub-records (sub-sequence numbers 0, 1, ...), every other record as it is (0)."""
    sequences, arrivals = records.sequence_numbers, records.arrivals_ms
    keys, data = records.partition_keys, records.data
    if not any(d.startswith(MAGIC) for d in data):  # the common case: columns as they came
        return Chunk(shard_id, sequences, [0] * len(sequences), keys, data, arrivals)
    rows: list[tuple[str, int, str, bytes, int, str | None]] = []
    for sequence, key, body, ms in zip(sequences, keys, data, arrivals, strict=True):
        subs = sub_records(body) if body.startswith(MAGIC) else None
        for index, (sub_key, sub_data, hash_key) in enumerate(subs if subs is not None else [(key, body, None)]):
            rows.append((sequence, index, sub_key, sub_data, ms, hash_key))
    hash_keys = [r[5] for r in rows]
    return Chunk(
        shard_id,
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2] for r in rows],
        [r[3] for r in rows],
        [r[4] for r in rows],
        hash_keys if any(k is not None for k in hash_keys) else None,
    )


__all__ = ["Chunk", "unpack"]
