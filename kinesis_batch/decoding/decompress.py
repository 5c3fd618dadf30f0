"""Stage 1: payloads that producers compressed (CloudWatch Logs subscriptions, gzip'ing
producers). ``auto`` inflates a payload that starts with gzip's magic bytes and passes the rest
as they are; ``gzip`` requires gzip; ``none`` passes everything."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from kinesis_batch.decoding.rejects import DECOMPRESS, Rejected

GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WINDOW = 16 + zlib.MAX_WBITS  # zlib's header-detection for a gzip member


def decompress(mode: str, payloads: Sequence[bytes]) -> tuple[list[bytes | None], list[Rejected]]:
    """Each payload inflated (or as it was); None where it failed, with its Rejected."""
    if mode == "none":
        return list(payloads), []
    out: list[bytes | None] = []
    rejects: list[Rejected] = []
    for position, payload in enumerate(payloads):
        if not payload.startswith(GZIP_MAGIC):
            if mode == "gzip":
                rejects.append(
                    Rejected(position, DECOMPRESS, "not gzip", f"starts with {payload[:2].hex() or 'nothing'}")
                )
                out.append(None)
            else:
                out.append(payload)
            continue
        try:
            out.append(gunzip(payload))
        except zlib.error as exc:
            rejects.append(Rejected(position, DECOMPRESS, "corrupt gzip", str(exc)))
            out.append(None)
    return out, rejects


def gunzip(payload: bytes) -> bytes:
    """One gzip member (or several, concatenated, as ``gzip`` allows) inflated."""
    inflater = zlib.decompressobj(_GZIP_WINDOW)
    parts = [inflater.decompress(payload)]
    while inflater.unused_data:  # a further member
        rest = inflater.unused_data
        inflater = zlib.decompressobj(_GZIP_WINDOW)
        parts.append(inflater.decompress(rest))
    if not inflater.eof:
        raise zlib.error("the gzip stream is truncated")
    return b"".join(parts)


__all__ = ["GZIP_MAGIC", "decompress", "gunzip"]
