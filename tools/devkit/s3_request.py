"""One S3 request as its client made it: what the S3 recorder keeps of each, and what the IAM
evaluator (iam_policy.py) says it is authorized by."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class S3Request:
    """One request as its client made it (path-style: ``/bucket/key?query``), and the headers
    that change what it does (``x-amz-copy-source``)."""

    method: str
    bucket: str
    key: str
    query: tuple[tuple[str, str], ...]
    copy_source: str = ""
    deleted: tuple[str, ...] = ()  # the keys a DeleteObjects (``POST ?delete``) names
    agent: str = ""  # the client's User-Agent: which library made it
    signer: str = ""  # the access key of its signature: which principal made it


__all__ = ["S3Request"]
