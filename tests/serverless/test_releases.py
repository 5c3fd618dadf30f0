"""An EMR release's Pythons: the one table the checks and the job's interpreter read."""

from __future__ import annotations

import pytest

from kinesis_batch.serverless.releases import pythons


@pytest.mark.parametrize(
    ("label", "python", "interpreter"),
    [
        ("emr-7.12.0", "3.11", "/usr/bin/python3.11"),
        ("emr-7.0.0", "3.9", "/usr/bin/python3"),
        ("emr-spark-8.0.0", "3.12", "/usr/bin/python3.12"),
        ("emr-6.15.0", "3.7", "/usr/bin/python3"),
    ],
)
def test_a_release_has_its_pythons(label: str, python: str, interpreter: str) -> None:
    assert pythons(label)[python] == interpreter


@pytest.mark.parametrize("label", ["emr-6.15.0", "emr-7.12.0"])
def test_no_release_before_emr_spark_8_has_python_3_12(label: str) -> None:
    assert "3.12" not in pythons(label)


def test_an_unknown_release_has_none() -> None:
    assert pythons("emr-5.36.0") == {} and pythons("emr-7") == {}
