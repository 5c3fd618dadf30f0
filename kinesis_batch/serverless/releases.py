"""Pure: what an EMR release runs a job's Python on. The environment archive holds packages,
not an interpreter, so the job must find a Python of the archive's version in the release's
image; this table is the one place that says where (EMR release guides, read 2026-11: EMR 7.x
runs 3.9 as ``python3`` and has 3.11 installed; emr-spark-8 ships 3.11, 3.12 and 3.13).

A custom image (the application's ``imageConfiguration``) may hold others: such an application
is checked as its release label says."""

from __future__ import annotations

import re

#: Release label -> {Python version: its interpreter in the release's image}.
PYTHONS: tuple[tuple[re.Pattern[str], dict[str, str]], ...] = (
    (re.compile(r"emr-6\.\d+\.\d+"), {"3.7": "/usr/bin/python3"}),
    (re.compile(r"emr-7\.\d+\.\d+"), {"3.9": "/usr/bin/python3", "3.11": "/usr/bin/python3.11"}),
    (
        re.compile(r"emr-spark-8\.\d+\.\d+"),
        {"3.11": "/usr/bin/python3.11", "3.12": "/usr/bin/python3.12", "3.13": "/usr/bin/python3.13"},
    ),
)


def pythons(release_label: str) -> dict[str, str]:
    """The Pythons of ``release_label``'s image, by version ({}: a release not known here)."""
    for pattern, found in PYTHONS:
        if pattern.fullmatch(release_label):
            return dict(found)
    return {}


__all__ = ["PYTHONS", "pythons"]
