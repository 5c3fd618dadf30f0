"""OpenLineage's file transport for a test's runs, and its events read back and checked for
what the spec requires of every run event (an event time, a producer, a run's UUID, a job's
and each dataset's namespace and name, each facet's producer and schema URL).

Against the spec's JSON schema itself they are not: it is published only in the OpenLineage
repository, which no package registry this project installs from carries."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any


def file_transport(path: Path) -> dict[str, str]:
    """The environment that sends a process's events to ``path``, one JSON line each."""
    return {
        "OPENLINEAGE__TRANSPORT__TYPE": "file",
        "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH": str(path),
        "OPENLINEAGE__TRANSPORT__APPEND": "true",
    }


def events(path: Path) -> list[dict[str, Any]]:
    """The events written to ``path``, in order, each checked for what the spec requires."""
    found = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for event in found:
        assert event["eventTime"] and event["producer"] and event["schemaURL"].startswith("https://openlineage.io/")
        assert uuid.UUID(event["run"]["runId"])
        assert event["job"]["namespace"] == "kinesis-batch" and event["job"]["name"]
        for dataset in event["inputs"] + event["outputs"]:
            assert dataset["namespace"] and "name" in dataset
        facets = [*event["run"]["facets"].values()]
        facets += [f for d in event["outputs"] for f in [*d["facets"].values(), *d["outputFacets"].values()]]
        assert all(f["_producer"] and f["_schemaURL"] for f in facets)
    return found
