"""Payloads that producers compressed: auto inflates gzip and passes the rest; gzip requires it."""

from __future__ import annotations

import gzip

import pytest

from kinesis_batch.decoding.decompress import decompress

ZIPPED = gzip.compress(b'{"a": 1}', mtime=0)  # fixed bytes: the test ids are the same in every worker


@pytest.mark.parametrize(
    ("mode", "payload", "out", "kind"),
    [
        ("auto", ZIPPED, b'{"a": 1}', None),
        ("auto", b'{"a": 1}', b'{"a": 1}', None),
        (
            "auto",
            ZIPPED + gzip.compress(b"more", mtime=0),
            b'{"a": 1}more',
            None,
        ),  # concatenated members, as gzip allows
        ("auto", ZIPPED[:-6], None, "corrupt gzip"),
        ("gzip", b'{"a": 1}', None, "not gzip"),
        ("none", ZIPPED, ZIPPED, None),
    ],
    ids=["auto-gzip", "auto-plain", "auto-two-members", "auto-corrupt", "gzip-plain", "none-gzip"],
)
def test_each_payload_is_inflated_passed_or_rejected(
    mode: str, payload: bytes, out: bytes | None, kind: str | None
) -> None:
    inflated, rejects = decompress(mode, [payload])
    assert inflated == [out]
    assert [r.kind for r in rejects] == ([kind] if kind else [])
