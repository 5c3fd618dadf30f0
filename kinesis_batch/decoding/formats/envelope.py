"""The decoder of a source's change records (``--changes dynamodb|dms|debezium``): each JSON
record is read through its envelope, and the row image becomes the decoded fields, typed as
the JSON decoder types them (exact decimals kept exact). What each record's envelope said (its
operation, position, key) is kept for the changes stage, by record position; records that are
not changes of a row (control records, Debezium's tombstones) are counted and make no row."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pyarrow as pa

from kinesis_batch.changes import debezium, dms, dynamodb
from kinesis_batch.changes.model import EnvelopeError, Skipped, Unwrapped
from kinesis_batch.decoding.decoded import Decoded
from kinesis_batch.decoding.formats.json import JsonDecoder, not_an_object, parse
from kinesis_batch.decoding.rejects import DECODE, Rejected
from kinesis_batch.routing.routes import value_at

UNWRAP: dict[str, Callable[[Any], Unwrapped | Skipped]] = {
    "dynamodb": dynamodb.unwrap,
    "dms": dms.unwrap,
    "debezium": debezium.unwrap,
}
#: A whole number past int64 keeps scale 0; a fraction dynamodb.SCALE's 18 digits.
WHOLE, FRACTION = pa.decimal128(38, 0), pa.decimal128(38, 18)


class EnvelopeDecoder:
    """``route_by``: a routed stream's path into the envelope (``metadata.table-name``), whose
    value each decoded record's route is (:attr:`routes`)."""

    def __init__(self, mode: str, known: pa.Schema | None = None, route_by: tuple[str, ...] = ()) -> None:
        self.unwrap = UNWRAP[mode]
        self.json = JsonDecoder(known)
        self._parse = msgspec.json.Decoder()
        self.route_by = route_by
        self.envelopes: dict[int, Unwrapped] = {}  # the last page's, by payload position (see renumber)
        self.routes: dict[int, Any] = {}  # the last page's route values, by payload position
        self.skipped: Counter[str] = Counter()

    def learn(self, table: pa.Schema) -> None:
        self.json.learn(table)

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        images: list[dict[str, Any]] = []
        positions: list[int] = []
        rejects: list[Rejected] = []
        self.envelopes, self.routes = {}, {}
        for position, payload in enumerate(payloads):
            body = parse(self._parse, position, payload)
            if isinstance(body, Rejected):
                rejects.append(body)
                continue
            if body is not None and not isinstance(body, dict):  # null: Debezium's tombstone, unwrap skips it
                rejects.append(not_an_object(position, body))
                continue
            try:
                change = self.unwrap(body)
            except EnvelopeError as exc:
                rejects.append(Rejected(position, DECODE, exc.kind, exc.detail))
                continue
            if isinstance(change, Skipped):
                self.skipped[change.kind] += 1
                continue
            self.envelopes[position] = change
            if self.route_by:
                self.routes[position] = value_at(body, self.route_by)
            images.append(change.image)
            positions.append(position)
        decoded = self.json.values(images, positions, rejects)
        return Decoded(_exact(decoded.values), decoded.positions, decoded.rejects)

    def written_routes(self, payloads: Sequence[bytes], path: tuple[str, ...]) -> list[list[Any] | None]:
        """The envelopes' values at ``path`` (a source's change names its table there)."""
        found: list[list[Any] | None] = []
        for position, payload in enumerate(payloads):
            body = parse(self._parse, position, payload)
            found.append([value_at(body, path)] if isinstance(body, dict) else None)
        return found

    def renumber(self, positions: Sequence[int]) -> None:
        """Key the last page's envelopes and route values by ``positions[i]`` (the records' own
        positions in their page) instead of ``i`` (their place among the payloads decoded)."""
        self.envelopes = {positions[i]: change for i, change in self.envelopes.items()}
        self.routes = {positions[i]: value for i, value in self.routes.items()}


def _exact(values: pa.StructArray) -> pa.StructArray:
    """Every decimal column at one type per kind (whole, fraction): an inferred decimal's
    precision follows the page's values, and would differ from page to page."""
    kind = _fixed(values.type)
    return values if kind == values.type else values.cast(kind)


def _fixed(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_decimal(kind):
        return WHOLE if kind.scale == 0 else FRACTION
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_fixed(field.type)) for field in kind])
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(kind.value_field.with_type(_fixed(kind.value_type)))
    return kind


__all__ = ["UNWRAP", "EnvelopeDecoder"]
