"""The OpenLineage specification's JSON schemas, as an independent judge of our events: the run
event against spec 2-0-2 (``OpenLineage.json``), and every facet against the schema its
``_schemaURL`` names: one of the spec's facets, or one of ours (kinesis_batch/openlineage/
facets.json). A facet whose schema is not among them is an error too.

The spec's schemas are vendored beside the project, in ``../shared/reference/openlineage-spec/``
(CI has them); where that folder is absent, :data:`SPEC_MISSING` says so and the tests that
need it skip with that reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT.parent / "shared" / "reference" / "openlineage-spec"
OURS = ROOT / "kinesis_batch" / "openlineage" / "facets.json"
EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
SPEC_MISSING = (
    None
    if (SPEC / "OpenLineage.json").is_file()
    else f"the OpenLineage specification's schemas are not at {SPEC} (vendored beside the project; CI has them)"
)


@cache
def registry() -> Registry[Any]:
    paths = [SPEC / "OpenLineage.json", *sorted((SPEC / "facets").glob("*.json")), OURS]
    resources = []
    for path in paths:
        contents = json.loads(path.read_text())
        resources.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources)


def problems(event: dict[str, Any]) -> list[str]:
    """Why ``event`` (as sent: JSON) is not valid against the schemas; empty when it is."""
    found = [f"event: {e.message} at {list(e.absolute_path)}" for e in _validator(EVENT).iter_errors(event)]
    for where, facet in facets(event):
        url = facet.get("_schemaURL", "")
        try:
            errors = list(_validator(url).iter_errors(facet))
        except Unresolvable:
            found.append(f"{where}: no schema at its _schemaURL {url!r}")
            continue
        found += [f"{where}: {e.message} at {list(e.absolute_path)}" for e in errors]
    return found


def facets(event: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every facet of ``event``, with where it is (``run.parent``, ``outputs[0].outputStatistics``)."""
    yield from (("run." + name, f) for name, f in event.get("run", {}).get("facets", {}).items())
    yield from (("job." + name, f) for name, f in event.get("job", {}).get("facets", {}).items())
    for side, kind in (("inputs", "inputFacets"), ("outputs", "outputFacets")):
        for i, dataset in enumerate(event.get(side, [])):
            for group in ("facets", kind):
                yield from ((f"{side}[{i}].{name}", f) for name, f in dataset.get(group, {}).items())


@cache
def _validator(url: str) -> Draft202012Validator:
    validator = Draft202012Validator(
        {"$ref": url}, registry=registry(), format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    validator.is_valid({})  # resolves the reference now: Unresolvable here, not mid-iteration
    return validator
