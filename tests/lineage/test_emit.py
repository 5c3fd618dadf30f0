"""Lineage is sent only where OpenLineage is configured the standard way, and not when it is
disabled (table of cases)."""

from __future__ import annotations

import pytest

from kinesis_batch.lineage.emit import configured


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, False),
        ({"OPENLINEAGE_URL": "http://marquez:5000"}, True),
        ({"OPENLINEAGE_CONFIG": "/etc/openlineage.yml"}, True),
        ({"OPENLINEAGE__TRANSPORT__TYPE": "file"}, True),
        ({"OPENLINEAGE_URL": "http://marquez:5000", "OPENLINEAGE_DISABLED": "true"}, False),
        ({"OPENLINEAGE_NAMESPACE": "team"}, False),  # names the job, configures no transport
    ],
)
def test_configured_the_standard_way(environ: dict[str, str], expected: bool) -> None:
    assert configured(environ) is expected
