"""What a decoder makes of a page of payloads, and the interface every decoder keeps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from kinesis_batch.decoding.rejects import SCHEMA, TYPE_CHANGED, Rejected
from kinesis_batch.decoding.types import unify


@dataclass(frozen=True)
class Decoded:
    """``values``: one struct per row (the decoded fields); ``positions``: the payload each row
    came from (a payload may make several rows, or none); ``rejects``: the payloads that made
    none because they could not be decoded."""

    values: pa.StructArray
    positions: Sequence[int]
    rejects: Sequence[Rejected]


class Decoder(Protocol):
    """Decodes a page of payloads. Deterministic: the same payloads give the same rows (a retried
    task rewrites the same batch). A payload that cannot be decoded is a Rejected value, never an
    exception; an exception means the decoder itself cannot work (a registry unreachable)."""

    def decode(self, payloads: Sequence[bytes]) -> Decoded: ...

    def learn(self, table: pa.Schema) -> None:
        """The table's fields as they are now (they grow during a run)."""

    def written_routes(self, payloads: Sequence[bytes], path: tuple[str, ...]) -> list[list[Any] | None]:
        """Each payload's rows' values at ``path`` as the record holds them, read without typing
        the record (a record that the page's or the wrong table's types reject still names its
        table); None for a payload that cannot be read so."""


def combine(groups: Sequence[tuple[pa.StructArray, Sequence[int]]], rejects: list[Rejected]) -> Decoded:
    """Rows decoded with different writer schemas (versions in one page) as one array of their
    unified type; a group whose types cannot join the others' is rejected whole."""
    from kinesis_batch.decoding.conform import fit
    from kinesis_batch.decoding.scalars import Policy

    kind: pa.DataType = pa.struct([])
    kept: list[tuple[pa.StructArray, Sequence[int]]] = []
    for values, positions in groups:
        merged = unify(kind, values.type)
        if merged is None:
            detail = "the fields of its schema version conflict with those of another version in the page"
            rejects.extend(Rejected(position, SCHEMA, TYPE_CHANGED, detail) for position in positions)
            continue
        kind = merged
        kept.append((values, positions))
    arrays = [fit(values, kind, Policy(exact=True), "").array for values, _ in kept]
    joined = pa.concat_arrays([a for a in arrays if a is not None]) if kept else pa.array([], type=kind)
    positions = [position for _, group in kept for position in group]
    return Decoded(joined, positions, sorted(rejects, key=lambda r: r.position))


__all__ = ["Decoded", "Decoder", "combine"]
