"""OpenLineage's file transport for a test's runs, and its events read back, each valid against
the specification's JSON schemas, facets included (tests.openlineage.spec; where the vendored
schemas are absent, tests.openlineage.test_spec skips saying so, and the events are checked for
what the spec requires of every run event by hand)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from tests.openlineage.spec import SPEC_MISSING, problems

#: Whose events are ours: the ``producer`` of every event kinesis-batch sends starts so.
OURS = "urn:kinesis-batch:"


def file_transport(path: Path) -> dict[str, str]:
    """The environment that sends a process's events to ``path``, one JSON line each."""
    return {
        "OPENLINEAGE__TRANSPORT__TYPE": "file",
        "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH": str(path),
        "OPENLINEAGE__TRANSPORT__APPEND": "true",
    }


def all_events(path: Path) -> list[dict[str, Any]]:
    """Every event written to ``path``, in order (ours and others', as an Airflow provider's)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def events(path: Path) -> list[dict[str, Any]]:
    """Our events written to ``path``, in order, each checked valid."""
    found = [event for event in all_events(path) if event["producer"].startswith(OURS)]
    for event in found:
        assert event["job"]["namespace"] == "kinesis-batch" and event["job"]["name"]
        if SPEC_MISSING is None:
            assert problems(event) == [], (problems(event), event)
            continue
        assert event["eventTime"] and event["schemaURL"].startswith("https://openlineage.io/")
        assert uuid.UUID(event["run"]["runId"])
    return found
